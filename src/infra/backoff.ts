import { describeError } from './database-errors.js';

export interface BackoffOptions {
  /** Wait after the first failure. */
  firstMs: number;
  /** The longest wait, whatever the number of failures. */
  maxMs: number;
  /** How much each failure multiplies the wait (default 2). */
  factor?: number;
}

/** Exponential backoff with a cap: the wait after `failures` failures in a row (1 = the first). */
export function backoffDelay(failures: number, options: BackoffOptions): number {
  return Math.min(options.maxMs, options.firstMs * (options.factor ?? 2) ** Math.max(0, failures - 1));
}

export interface LoopLogger {
  info(message: string): void;
  warn(message: string): void;
}

export interface PeriodicTaskOptions {
  /** Names the loop in its log lines. */
  name: string;
  intervalMs: number;
  task: () => Promise<unknown>;
  log: LoopLogger;
  /** Retry waits after failures (capped at the interval). Default: 5 s doubling up to 5 min. */
  retry?: BackoffOptions;
  /** Told of every failure (metrics). */
  onFailure?: (error: unknown) => void;
}

/**
 * Runs `task` every `intervalMs` until stopped (first run after one interval). A failure logs
 * one readable line and is retried after an exponential backoff, never later than the normal
 * interval: an outage neither floods the log nor hammers the database, and the work resumes by
 * itself once the database is back. Timers do not keep the process alive.
 */
export function startPeriodicTask(options: PeriodicTaskOptions): { stop(): void } {
  const retry = options.retry ?? { firstMs: 5_000, maxMs: 5 * 60_000 };
  const cap = { firstMs: retry.firstMs, maxMs: Math.min(retry.maxMs, options.intervalMs) };
  let failures = 0;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

  const schedule = (delayMs: number) => {
    if (stopped) return;
    timer = setTimeout(() => void run(), delayMs);
    timer.unref();
  };
  const run = async () => {
    try {
      await options.task();
      if (failures > 0) options.log.info(`${options.name}: succeeded again after ${failures} failed attempt(s)`);
      failures = 0;
      schedule(options.intervalMs);
    } catch (error) {
      failures += 1;
      options.onFailure?.(error);
      const delay = backoffDelay(failures, cap);
      options.log.warn(`${options.name} failed (${failures} in a row, next try in ${Math.round(delay / 1000)} s): ${describeError(error)}`);
      schedule(delay);
    }
  };

  schedule(options.intervalMs);
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

export interface RetryingTaskOptions {
  /** Names the work in its log lines ("finishing interrupted dataset deletes"). */
  name: string;
  retry: BackoffOptions;
  log: LoopLogger;
  /** Told of every failure (metrics). */
  onFailure?: (error: unknown) => void;
  /**
   * One attempt. Resolves `true` when there is more to do at once (the failure count starts
   * again), anything else when the work is done. `pause` ends early when the task is stopped.
   */
  run: (control: { stopped: () => boolean; pause: (ms: number) => Promise<void> }) => Promise<unknown>;
}

/**
 * Runs background work that must finish (start-up resumes, index warm-up) until it is done: a
 * failure logs one readable line and is retried after an exponential backoff. `stop()` ends the
 * waits at once and resolves when the attempt in progress has ended; a failure while stopping
 * is not one.
 */
export function startRetryingTask(options: RetryingTaskOptions): { stop(): Promise<void> } {
  let stopping = false;
  let wake: (() => void) | undefined;
  const stopped = () => stopping;
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      timer.unref();
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  const running = (async () => {
    for (let failures = 0; !stopping; ) {
      try {
        if ((await options.run({ stopped, pause })) !== true) return;
        failures = 0;
      } catch (error) {
        if (stopping) return;
        failures += 1;
        options.onFailure?.(error);
        const delay = backoffDelay(failures, options.retry);
        options.log.warn(`${options.name} failed (${failures} in a row, next try in ${Math.round(delay / 1000)} s): ${describeError(error)}`);
        await pause(delay);
      }
    }
  })();
  return {
    async stop() {
      stopping = true;
      wake?.();
      await running;
    },
  };
}
