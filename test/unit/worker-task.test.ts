import { afterEach, describe, expect, it } from 'vitest';
import { isAppError } from '../../src/infra/errors.js';
import {
  MAX_RUNNING_WORKER_TASKS as RUNNING,
  MAX_WAITING_WORKER_TASKS,
  MAX_WAITING_WORKER_TASKS_PER_OWNER as PER_OWNER,
  runWorkerTask,
  workerTaskLoad,
} from '../../src/infra/worker-task.js';

/**
 * A worker that notes when it starts (its place in the start order) and answers its id once the
 * test opens its gate. Cells: [0] starts so far, [1 + id] its start number, [1 + size + id] its gate.
 */
const GATED_WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const { shared, id, size } = workerData;
const cells = new Int32Array(shared);
Atomics.store(cells, 1 + id, Atomics.add(cells, 0, 1) + 1);
Atomics.wait(cells, 1 + size + id, 0);
parentPort.postMessage(id);
`;

/** Every set of gated tasks a test made: opened after it, so that a failed test leaves no slot held. */
const made: { openAll: () => Promise<void> }[] = [];
afterEach(async () => {
  for (const tasks of made.splice(0)) await tasks.openAll();
});

/** Named tasks of the gated worker; the order they start in is read from their shared cells. */
function gatedTasks(size = 64) {
  const shared = new SharedArrayBuffer(4 * (1 + 2 * size));
  const cells = new Int32Array(shared);
  const names: string[] = [];
  const outcomes: Promise<unknown>[] = [];
  const opened = new Set<string>();
  const startOrder = () =>
    names
      .map((name, id) => ({ name, at: Atomics.load(cells, 1 + id) }))
      .filter(({ at }) => at > 0)
      .sort((a, b) => a.at - b.at)
      .map(({ name }) => name);
  const openGate = (id: number) => {
    opened.add(names[id]!);
    Atomics.store(cells, 1 + size + id, 1);
    Atomics.notify(cells, 1 + size + id);
    return outcomes[id]!.catch(() => undefined);
  };
  const open = (name: string) => openGate(names.indexOf(name));
  const tasks = {
    /** Runs (or queues) a task of `owner`; rejects at once when it is refused. */
    add(owner: string | undefined, name: string): Promise<unknown> {
      const id = names.push(name) - 1;
      outcomes[id] = runWorkerTask<number>(GATED_WORKER, { eval: true, workerData: { shared, id, size } }, 20_000, { owner });
      return outcomes[id];
    },
    startOrder,
    started: () => Atomics.load(cells, 0),
    open,
    /** Frees one slot: ends the earliest started task still running, and waits for the next start if one was waiting. */
    async freeOne(): Promise<void> {
      const starts = this.started();
      const waiting = workerTaskLoad().waiting;
      await open(startOrder().find((name) => !opened.has(name))!);
      if (waiting > 0) await until(() => this.started() > starts);
    },
    /** Lets every task end (all gates at once: waiting tasks start in the pool's order, not in ours). */
    async openAll(): Promise<void> {
      await Promise.all(names.map((_, id) => openGate(id)));
    },
  };
  made.push(tasks);
  return tasks;
}

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
}

const refusal = (promise: Promise<unknown>) => promise.then(() => undefined, (error: unknown) => (isAppError(error) ? { status: error.httpStatus, message: error.message } : error));

describe('worker tasks', () => {
  it('run a few at a time, the rest wait their turn, and a burst beyond the waiting room is refused with a 429', async () => {
    const tasks = gatedTasks();
    for (let i = 0; i < RUNNING; i++) tasks.add('team-0', `run${i}`);
    // Tasks without an owner share one owner's places.
    for (let i = 0; i < PER_OWNER; i++) tasks.add(undefined, `anonymous${i}`);
    expect(await refusal(tasks.add(undefined, 'anonymous-extra'))).toMatchObject({ status: 429, message: expect.stringContaining("this team's documents") });
    // The rest of the waiting room filled by three teams: past it every owner is refused.
    const owners = ['team-1', 'team-2', 'team-3'];
    expect((owners.length + 1) * PER_OWNER).toBe(MAX_WAITING_WORKER_TASKS);
    for (const owner of owners) for (let i = 0; i < PER_OWNER; i++) tasks.add(owner, `${owner}-${i}`);
    expect(workerTaskLoad()).toEqual({ running: RUNNING, waiting: MAX_WAITING_WORKER_TASKS });
    expect(workerTaskLoad('team-0')).toEqual({ running: RUNNING, waiting: 0 });
    expect(workerTaskLoad('team-1')).toEqual({ running: 0, waiting: PER_OWNER });
    expect(await refusal(tasks.add('team-4', 'late'))).toMatchObject({ status: 429, message: expect.stringContaining('Too many documents') });

    await tasks.openAll();
    expect(tasks.started()).toBe(RUNNING + MAX_WAITING_WORKER_TASKS);
    expect(workerTaskLoad()).toEqual({ running: 0, waiting: 0 });
  }, 60_000);

  it("refuses an owner past its share of the waiting room while another owner still gets a place", async () => {
    const tasks = gatedTasks();
    for (let i = 0; i < RUNNING + PER_OWNER; i++) tasks.add('team-a', `a${i}`);
    expect(workerTaskLoad('team-a')).toEqual({ running: RUNNING, waiting: PER_OWNER });
    expect(await refusal(tasks.add('team-a', 'a-extra'))).toMatchObject({ status: 429 });

    const placed = tasks.add('team-b', 'b1');
    expect(workerTaskLoad('team-b')).toEqual({ running: 0, waiting: 1 });
    expect(workerTaskLoad()).toEqual({ running: RUNNING, waiting: PER_OWNER + 1 });
    await tasks.openAll();
    expect(await placed).toEqual({ message: expect.any(Number) });
    expect(workerTaskLoad()).toEqual({ running: 0, waiting: 0 });
  }, 60_000);

  it("gives the next free slot to another team's task, not to the waiting tasks of the team holding the others", async () => {
    const tasks = gatedTasks();
    const waitingOfA = ['a1', 'a2', 'a3', 'a4', 'a5'];
    for (let i = 0; i < RUNNING; i++) tasks.add('team-a', `run${i}`);
    for (const name of waitingOfA) tasks.add('team-a', name);
    tasks.add('team-b', 'b1');
    await until(() => tasks.started() === RUNNING);

    await tasks.freeOne();
    expect(tasks.startOrder()[RUNNING]).toBe('b1');
    // Team A's own tasks still start in the order they came.
    for (const _ of waitingOfA) await tasks.freeOne();
    expect(tasks.startOrder().slice(RUNNING + 1)).toEqual(waitingOfA);
    await tasks.openAll();
    expect(workerTaskLoad()).toEqual({ running: 0, waiting: 0 });
  }, 60_000);

  it('hands freed slots to the owners with waiting tasks in turn, first come first served within each', async () => {
    const tasks = gatedTasks();
    // Another team holds every slot; team A queues three tasks, then team B one.
    for (let i = 0; i < RUNNING; i++) tasks.add('team-z', `z${i}`);
    for (const name of ['a1', 'a2', 'a3']) tasks.add('team-a', name);
    tasks.add('team-b', 'b1');
    await until(() => tasks.started() === RUNNING);

    for (let i = 0; i < 4; i++) await tasks.freeOne();
    expect(tasks.startOrder().slice(RUNNING)).toEqual(['a1', 'b1', 'a2', 'a3']);
    await tasks.openAll();
    expect(workerTaskLoad()).toEqual({ running: 0, waiting: 0 });
  }, 60_000);

  it('releases the slot of a task that times out, fails or cannot start, and hands it on', async () => {
    const tasks = gatedTasks();
    for (let i = 0; i < RUNNING; i++) tasks.add('team-a', `run${i}`);
    const timesOut = runWorkerTask('Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);', { eval: true }, 50, { owner: 'team-b' });
    const fails = runWorkerTask("throw new Error('boom');", { eval: true }, 20_000, { owner: 'team-c' });
    // A function cannot be handed to a thread: the Worker constructor throws.
    const cannotStart = runWorkerTask('', { eval: true, workerData: { notCloneable: () => 1 } }, 20_000, { owner: 'team-d' });
    tasks.add('team-e', 'e1');
    expect(workerTaskLoad()).toEqual({ running: RUNNING, waiting: 4 });

    await tasks.open('run0');
    expect(await timesOut).toEqual({ failure: { kind: 'timeout', ms: 50 } });
    expect(await fails).toEqual({ failure: { kind: 'error', message: 'boom' } });
    await expect(cannotStart).rejects.toThrow(/could not be cloned/);
    await until(() => tasks.startOrder().includes('e1'));
    expect(workerTaskLoad()).toEqual({ running: RUNNING, waiting: 0 });
    expect(workerTaskLoad('team-a')).toEqual({ running: RUNNING - 1, waiting: 0 });
    expect(workerTaskLoad('team-e')).toEqual({ running: 1, waiting: 0 });
    for (const owner of ['team-b', 'team-c', 'team-d']) expect(workerTaskLoad(owner)).toEqual({ running: 0, waiting: 0 });

    await tasks.openAll();
    for (const owner of ['team-a', 'team-e']) expect(workerTaskLoad(owner)).toEqual({ running: 0, waiting: 0 });
    expect(workerTaskLoad()).toEqual({ running: 0, waiting: 0 });
  }, 60_000);
});
