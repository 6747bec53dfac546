import { availableParallelism } from 'node:os';
import { Worker, type WorkerOptions } from 'node:worker_threads';
import { appendAll } from '../domain/append-all.js';
import { Errors } from './errors.js';
import { NEXT_PAGE, type WorkerPage } from './worker-pages.js';

/**
 * Worker tasks running at once in this process. Each may use its heap limit (hundreds of MB), so
 * without a bound a burst of uploads would add those up; beyond it tasks wait their turn.
 */
export const MAX_RUNNING_WORKER_TASKS = Math.min(4, Math.max(2, availableParallelism()));
/** Tasks waiting beyond these are refused at once (429) instead of holding their input in memory. */
export const MAX_WAITING_WORKER_TASKS = 32;
/** Waiting places one owner may hold: a team's burst is refused at its share, and other teams still get places. */
export const MAX_WAITING_WORKER_TASKS_PER_OWNER = 8;

/** Whose conversion a task is: the team it runs for. Tasks of none (`undefined`) share one anonymous owner. */
export interface WorkerTaskOwner {
  owner: string | undefined;
  /**
   * Ends the task once it aborts (a chat turn whose client hung up): one waiting for a slot leaves
   * its place, a running one's thread is terminated (its slot is free once the thread is gone).
   * Either then fails as a thread that died would, with the abort named.
   */
  signal?: AbortSignal;
}

/** How a task its signal ended fails. */
const CUT: WorkerFailure = { kind: 'error', message: 'The conversion was cut: its caller is gone' };

/** Team ids are never empty, so this names no team. */
const ANONYMOUS_OWNER = '';

let running = 0;
let waiting = 0;
/** Running tasks by owner (owners with none are left out). */
const runningOf = new Map<string, number>();
/**
 * Waiting tasks by owner, first come first served within an owner. The map's order is the owners'
 * turn: an owner handed a slot goes to the back (a Map keeps insertion order), so slots go round
 * the owners with waiting tasks instead of to one team's whole backlog first.
 */
const waitingOf = new Map<string, (() => void)[]>();

/** How many tasks run and wait now, in all or of one owner (for tests and metrics). */
export function workerTaskLoad(owner?: string): { running: number; waiting: number } {
  if (owner === undefined) return { running, waiting };
  return { running: runningOf.get(owner) ?? 0, waiting: waitingOf.get(owner)?.length ?? 0 };
}

function countRunning(owner: string, change: 1 | -1): void {
  const count = (runningOf.get(owner) ?? 0) + change;
  if (count > 0) runningOf.set(owner, count);
  else runningOf.delete(owner);
}

/** Takes a slot, or a waiting place until one frees up; false when `signal` aborted first (no place is held then). */
async function takeSlot(owner: string, signal: AbortSignal | undefined): Promise<boolean> {
  // A free slot means nobody waits: slots are handed over as soon as they free up.
  if (running < MAX_RUNNING_WORKER_TASKS) {
    running += 1;
    countRunning(owner, 1);
    return true;
  }
  if (waiting >= MAX_WAITING_WORKER_TASKS) throw Errors.tooManyRequest('Too many documents are being converted at once; retry shortly', 5);
  const queue = waitingOf.get(owner) ?? [];
  if (queue.length >= MAX_WAITING_WORKER_TASKS_PER_OWNER) throw Errors.tooManyRequest("Too many of this team's documents are being converted at once; retry shortly", 5);
  if (queue.length === 0) waitingOf.set(owner, queue);
  waiting += 1;
  // The slot is handed over by the task that ends (running stays the same).
  return new Promise<boolean>((resolve) => {
    const start = () => {
      signal?.removeEventListener('abort', leave);
      resolve(true);
    };
    const leave = () => {
      const at = queue.indexOf(start);
      if (at === -1) return;
      queue.splice(at, 1);
      if (queue.length === 0 && waitingOf.get(owner) === queue) waitingOf.delete(owner);
      waiting -= 1;
      resolve(false);
    };
    queue.push(start);
    signal?.addEventListener('abort', leave, { once: true });
  });
}

/**
 * The owner whose turn it is. One already holding all slots but one is passed over while another
 * owner waits, so a second team's task takes the next slot that frees up instead of waiting for
 * its turn to come round (running tasks are never stopped: an owner that took every slot while
 * alone keeps them until they end). No slot is left idle: an owner waiting alone takes it.
 */
function ownerInTurn(): string | undefined {
  let inTurn: string | undefined;
  for (const owner of waitingOf.keys()) {
    if ((runningOf.get(owner) ?? 0) < MAX_RUNNING_WORKER_TASKS - 1) return owner;
    inTurn ??= owner;
  }
  return inTurn;
}

function releaseSlot(owner: string): void {
  countRunning(owner, -1);
  const next = ownerInTurn();
  if (next === undefined) {
    running -= 1;
    return;
  }
  const queue = waitingOf.get(next)!;
  const start = queue.shift()!;
  waitingOf.delete(next);
  if (queue.length > 0) waitingOf.set(next, queue);
  waiting -= 1;
  countRunning(next, 1);
  start();
}

/**
 * The source of an eval'd worker that imports the module `entry` (a path without its extension,
 * relative to `callerUrl`, the caller's import.meta.url): the built JavaScript module, or from
 * sources (tests, tsx) the TypeScript one, through tsx's loader registered inside the worker.
 */
export function workerEntrySource(callerUrl: string, entry: string): string {
  const fromSource = callerUrl.endsWith('.ts');
  const href = new URL(`${entry}${fromSource ? '.ts' : '.js'}`, callerUrl).href;
  return fromSource
    ? `import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(href)}); });`
    : `import(${JSON.stringify(href)});`;
}

/** Why a worker task ended without a message: the time limit, or the thread died. */
export type WorkerFailure = { kind: 'timeout'; ms: number } | { kind: 'error'; message: string } | { kind: 'exit'; code: number };

/**
 * Runs one task in a worker thread and resolves with the first message it posts. Work that could
 * block the event loop on hostile input (PDF parsing, HTML conversion with a user's selector) runs
 * this way, with a time limit and `resourceLimits` for the heap, a few at a time (the rest wait,
 * or are refused with a 429 when many wait, or many of the same owner). Waiting tasks are started
 * owner by owner in turn, so one team's many uploads do not hold every other team's back. The
 * thread is always terminated.
 */
export async function runWorkerTask<M>(
  source: string,
  options: WorkerOptions & { eval: true },
  timeoutMs: number,
  task: WorkerTaskOwner,
): Promise<{ message: M } | { failure: WorkerFailure }> {
  let answer: M | undefined;
  const failure = await runInSlot<M>(source, options, timeoutMs, task, (message) => {
    answer = message;
    return true;
  });
  return failure ? { failure } : { message: answer as M };
}

/**
 * runWorkerTask for an answer too large for one message (a big file's chunks): the worker posts
 * it in pages (worker-pages.ts), the next one only when asked, so that each is received in its own
 * turn of the event loop; messages already queued would all be received in one. Resolves with the
 * first message and the items of every page; the limits hold for the whole exchange.
 */
export async function runPagedWorkerTask<M extends WorkerPage<T>, T>(
  source: string,
  options: WorkerOptions & { eval: true },
  timeoutMs: number,
  task: WorkerTaskOwner,
): Promise<{ message: M; items: T[] } | { failure: WorkerFailure }> {
  let first: M | undefined;
  const items: T[] = [];
  const failure = await runInSlot<M>(source, options, timeoutMs, task, (message, worker) => {
    first ??= message;
    if (message.items) appendAll(items, message.items);
    if (!message.more) return true;
    worker.postMessage(NEXT_PAGE);
    return false;
  });
  return failure ? { failure } : { message: first as M, items };
}

/** Runs a worker once `task.owner` has a slot; `receive` takes its messages until it returns true (the last). */
async function runInSlot<M>(
  source: string,
  options: WorkerOptions & { eval: true },
  timeoutMs: number,
  task: WorkerTaskOwner,
  receive: (message: M, worker: Worker) => boolean,
): Promise<WorkerFailure | undefined> {
  const owner = task.owner ?? ANONYMOUS_OWNER;
  if (task.signal?.aborted) return CUT;
  if (!(await takeSlot(owner, task.signal))) return CUT;
  try {
    return await runInWorker<M>(source, options, timeoutMs, receive, task.signal);
  } finally {
    releaseSlot(owner);
  }
}

function runInWorker<M>(
  source: string,
  options: WorkerOptions & { eval: true },
  timeoutMs: number,
  receive: (message: M, worker: Worker) => boolean,
  signal: AbortSignal | undefined,
): Promise<WorkerFailure | undefined> {
  if (signal?.aborted) return Promise.resolve(CUT);
  const worker = new Worker(source, options);
  return new Promise((resolve) => {
    let settled = false;
    const finish = (failure?: WorkerFailure) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', cut);
      // Answered once the thread is gone, so that its slot is free only when its memory is.
      worker.terminate().then(
        () => resolve(failure),
        () => resolve(failure),
      );
    };
    const timer = setTimeout(() => finish({ kind: 'timeout', ms: timeoutMs }), timeoutMs);
    const cut = () => finish(CUT);
    signal?.addEventListener('abort', cut, { once: true });
    worker.on('message', (message: M) => {
      if (!settled && receive(message, worker)) finish();
    });
    worker.once('error', (error) => finish({ kind: 'error', message: error.message }));
    worker.once('exit', (code) => finish({ kind: 'exit', code }));
  });
}
