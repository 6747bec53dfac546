import { Worker, type WorkerOptions } from 'node:worker_threads';

/** Why a worker task ended without a message: the time limit, or the thread died. */
export type WorkerFailure = { kind: 'timeout'; ms: number } | { kind: 'error'; message: string } | { kind: 'exit'; code: number };

/**
 * Runs one task in a worker thread and resolves with the first message it posts. Work that could
 * block the event loop on hostile input (PDF parsing, HTML conversion with a user's selector) runs
 * this way, with a time limit and `resourceLimits` for the heap. The thread is always terminated.
 */
export function runWorkerTask<M>(source: string, options: WorkerOptions & { eval: true }, timeoutMs: number): Promise<{ message: M } | { failure: WorkerFailure }> {
  const worker = new Worker(source, options);
  return new Promise((resolve) => {
    let settled = false;
    const finish = (outcome: { message: M } | { failure: WorkerFailure }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void worker.terminate();
      resolve(outcome);
    };
    const timer = setTimeout(() => finish({ failure: { kind: 'timeout', ms: timeoutMs } }), timeoutMs);
    worker.once('message', (message: M) => finish({ message }));
    worker.once('error', (error) => finish({ failure: { kind: 'error', message: error.message } }));
    worker.once('exit', (code) => finish({ failure: { kind: 'exit', code } }));
  });
}
