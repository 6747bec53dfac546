import { availableParallelism } from 'node:os';
import { Worker, type WorkerOptions } from 'node:worker_threads';
import { Errors } from './errors.js';

/**
 * Worker tasks running at once in this process. Each may use its heap limit (hundreds of MB), so
 * without a bound a burst of uploads would add those up; beyond it tasks wait their turn.
 */
export const MAX_RUNNING_WORKER_TASKS = Math.min(4, Math.max(2, availableParallelism()));
/** Tasks waiting beyond these are refused at once (429) instead of holding their input in memory. */
export const MAX_WAITING_WORKER_TASKS = 32;

let running = 0;
const waiting: (() => void)[] = [];

/** How many tasks run and wait now (for tests and metrics). */
export function workerTaskLoad(): { running: number; waiting: number } {
  return { running, waiting: waiting.length };
}

async function takeSlot(): Promise<void> {
  if (running < MAX_RUNNING_WORKER_TASKS) {
    running += 1;
    return;
  }
  if (waiting.length >= MAX_WAITING_WORKER_TASKS) throw Errors.tooManyRequest('Too many documents are being converted at once; retry shortly', 5);
  // The slot is handed over by the task that ends (running stays the same).
  await new Promise<void>((resolve) => waiting.push(resolve));
}

function releaseSlot(): void {
  const next = waiting.shift();
  if (next) next();
  else running -= 1;
}

/** Why a worker task ended without a message: the time limit, or the thread died. */
export type WorkerFailure = { kind: 'timeout'; ms: number } | { kind: 'error'; message: string } | { kind: 'exit'; code: number };

/**
 * Runs one task in a worker thread and resolves with the first message it posts. Work that could
 * block the event loop on hostile input (PDF parsing, HTML conversion with a user's selector) runs
 * this way, with a time limit and `resourceLimits` for the heap, a few at a time (the rest wait,
 * or are refused with a 429 when many wait). The thread is always terminated.
 */
export async function runWorkerTask<M>(source: string, options: WorkerOptions & { eval: true }, timeoutMs: number): Promise<{ message: M } | { failure: WorkerFailure }> {
  await takeSlot();
  try {
    return await runInWorker<M>(source, options, timeoutMs);
  } finally {
    releaseSlot();
  }
}

function runInWorker<M>(source: string, options: WorkerOptions & { eval: true }, timeoutMs: number): Promise<{ message: M } | { failure: WorkerFailure }> {
  const worker = new Worker(source, options);
  return new Promise((resolve) => {
    let settled = false;
    const finish = (outcome: { message: M } | { failure: WorkerFailure }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      // Answered once the thread is gone, so that its slot is free only when its memory is.
      worker.terminate().then(
        () => resolve(outcome),
        () => resolve(outcome),
      );
    };
    const timer = setTimeout(() => finish({ failure: { kind: 'timeout', ms: timeoutMs } }), timeoutMs);
    worker.once('message', (message: M) => finish({ message }));
    worker.once('error', (error) => finish({ failure: { kind: 'error', message: error.message } }));
    worker.once('exit', (code) => finish({ failure: { kind: 'exit', code } }));
  });
}
