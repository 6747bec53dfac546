import { describe, expect, it } from 'vitest';
import { isAppError } from '../../src/infra/errors.js';
import { MAX_RUNNING_WORKER_TASKS, MAX_WAITING_WORKER_TASKS, runWorkerTask, workerTaskLoad } from '../../src/infra/worker-task.js';

/** A worker that answers once the main thread tells it to (it waits on a shared flag). */
const WAITING_WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const flag = new Int32Array(workerData.shared);
Atomics.wait(flag, 0, 0);
parentPort.postMessage('done');
`;

describe('worker tasks', () => {
  it('run a few at a time, the rest wait their turn, and a burst beyond the waiting room is refused with a 429', async () => {
    const shared = new SharedArrayBuffer(4);
    const flag = new Int32Array(shared);
    const total = MAX_RUNNING_WORKER_TASKS + MAX_WAITING_WORKER_TASKS;
    const tasks = Array.from({ length: total }, () => runWorkerTask<string>(WAITING_WORKER, { eval: true, workerData: { shared } }, 20_000));
    // Let the first ones start.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(workerTaskLoad()).toEqual({ running: MAX_RUNNING_WORKER_TASKS, waiting: MAX_WAITING_WORKER_TASKS });
    const refused = await runWorkerTask<string>(WAITING_WORKER, { eval: true, workerData: { shared } }, 20_000).catch((error: unknown) => error);
    expect(isAppError(refused) && refused.httpStatus).toBe(429);

    Atomics.store(flag, 0, 1);
    Atomics.notify(flag, 0);
    const outcomes = await Promise.all(tasks);
    expect(outcomes.every((outcome) => 'message' in outcome && outcome.message === 'done')).toBe(true);
    expect(workerTaskLoad()).toEqual({ running: 0, waiting: 0 });
  }, 60_000);
});
