import type { FastifyInstance } from 'fastify';
import { startPeriodicTask, startRetryingTask } from '../infra/backoff.js';

/** Work a crash (or a database error) left half done, and how it is finished. */
export interface ResumeTask {
  /** The start-up task's name (`apps: settle interrupted inserts`). */
  startupName: string;
  /** What the start-up run and the sweep are called in logs. */
  resumeName: string;
  sweepName: string;
  /** The ops metrics source of their failures. */
  source: string;
  retry: { firstMs: number; maxMs: number };
  sweepIntervalMs: number;
  /**
   * The start-up run, given the time start-up began; resolves `true` to run again at once (after
   * waiting on `pause` for the leases of a crashed process to run out).
   */
  resume(control: { stopped: () => boolean; pause: (ms: number) => Promise<void> }, startedAt: Date): Promise<unknown>;
  /** One periodic pass, for work a live process's database error left. */
  sweep(stopped: () => boolean): Promise<unknown>;
}

/**
 * Registers a resume: once at start, in the background (readiness does not wait), retried with
 * backoff until done; then a periodic sweep. Both stop when the server closes (`preClose`), the
 * attempt in progress awaited.
 */
export function registerResumeTask(app: FastifyInstance, task: ResumeTask): void {
  let resume: { stop(): Promise<void> } | undefined;
  let sweep: { stop(): void } | undefined;
  let closing = false;
  const stopped = () => closing;
  const onFailure = (error: unknown) => app.opsMetrics.databaseError(task.source, error);

  app.startup.add(task.startupName, async () => {
    const startedAt = new Date();
    resume = startRetryingTask({ name: task.resumeName, retry: task.retry, log: app.log, onFailure, run: (control) => task.resume(control, startedAt) });
    sweep = startPeriodicTask({ name: task.sweepName, intervalMs: task.sweepIntervalMs, task: () => task.sweep(stopped), log: app.log, onFailure });
  });
  app.addHook('preClose', async () => {
    closing = true;
    sweep?.stop();
    await resume?.stop();
  });
}
