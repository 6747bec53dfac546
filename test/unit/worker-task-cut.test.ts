import { describe, expect, it } from 'vitest';
import { MAX_RUNNING_WORKER_TASKS as RUNNING, runWorkerTask, workerTaskLoad } from '../../src/infra/worker-task.js';

/**
 * A worker task ended by its signal (a chat turn's hang-up): a running one's thread is
 * terminated and its slot freed, a waiting one leaves its place; either fails as cut.
 */

/** A worker that never answers on its own (it blocks until its thread is terminated). */
const STUCK = 'Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);';

describe('a worker task and its signal', () => {
  it('a running task: its thread is terminated and the slot freed', async () => {
    const controller = new AbortController();
    const running = runWorkerTask(STUCK, { eval: true }, 60_000, { owner: 'cut-running', signal: controller.signal });
    while (workerTaskLoad('cut-running').running === 0) await new Promise((resolve) => setImmediate(resolve));
    controller.abort();
    expect(await running).toEqual({ failure: { kind: 'error', message: expect.stringContaining('cut') } });
    expect(workerTaskLoad('cut-running')).toEqual({ running: 0, waiting: 0 });
  });

  it('a waiting task: leaves its place and never starts; the others go on', async () => {
    const holders = Array.from({ length: RUNNING }, () => new AbortController());
    const held = holders.map((holder) => runWorkerTask(STUCK, { eval: true }, 60_000, { owner: 'cut-holder', signal: holder.signal }));
    const controller = new AbortController();
    const waiting = runWorkerTask("require('node:worker_threads').parentPort.postMessage('ran');", { eval: true }, 60_000, { owner: 'cut-waiting', signal: controller.signal });
    while (workerTaskLoad('cut-waiting').waiting === 0) await new Promise((resolve) => setImmediate(resolve));
    controller.abort();
    expect(await waiting).toEqual({ failure: { kind: 'error', message: expect.stringContaining('cut') } });
    expect(workerTaskLoad('cut-waiting')).toEqual({ running: 0, waiting: 0 });
    for (const holder of holders) holder.abort();
    await Promise.all(held);
    expect(workerTaskLoad()).toEqual({ running: 0, waiting: 0 });
    // A task after them runs as usual.
    expect(await runWorkerTask<string>("require('node:worker_threads').parentPort.postMessage('ran');", { eval: true }, 60_000, { owner: 'cut-after' })).toEqual({ message: 'ran' });
  });

  it('a task whose signal aborted before it started does not start', async () => {
    const controller = new AbortController();
    controller.abort();
    expect(await runWorkerTask("require('node:worker_threads').parentPort.postMessage('ran');", { eval: true }, 60_000, { owner: 'cut-before', signal: controller.signal })).toMatchObject({ failure: { kind: 'error' } });
    expect(workerTaskLoad('cut-before')).toEqual({ running: 0, waiting: 0 });
  });
});
