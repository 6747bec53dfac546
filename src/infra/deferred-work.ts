/**
 * Work a request leaves behind (a write retried later) that must not outlive the app: `flush`,
 * called when the app closes, runs every waiting task at once instead of at its time and waits
 * for all of them, so none runs against a closed database client. Waiting is only worth doing
 * while the app runs; at close the last chance is now.
 */
export interface DeferredWork {
  /** Runs `task` now, tracked until it settles. */
  now(task: () => Promise<unknown>): void;
  /** Runs `task` after `ms`, or at `flush` if that comes first (at once once flushing began). */
  later(ms: number, task: () => Promise<unknown>): void;
  /** Runs the waiting tasks now and resolves when every task, those they start included, settled. */
  flush(): Promise<void>;
}

/** `onError` hears every task failure (a task's rejection never escapes). */
export function createDeferredWork(onError: (error: unknown) => void): DeferredWork {
  const waiting = new Map<NodeJS.Timeout, () => Promise<unknown>>();
  const running = new Set<Promise<void>>();
  let flushing = false;

  const now = (task: () => Promise<unknown>) => {
    const run = Promise.resolve()
      .then(task)
      .then(() => undefined, onError)
      .finally(() => running.delete(run));
    running.add(run);
  };
  return {
    now,
    later(ms, task) {
      if (flushing) return now(task);
      const timer = setTimeout(() => {
        waiting.delete(timer);
        now(task);
      }, ms);
      // A retry alone does not keep the process alive.
      timer.unref();
      waiting.set(timer, task);
    },
    async flush() {
      flushing = true;
      for (const [timer, task] of waiting) {
        clearTimeout(timer);
        now(task);
      }
      waiting.clear();
      while (running.size > 0) await Promise.all(running);
    },
  };
}
