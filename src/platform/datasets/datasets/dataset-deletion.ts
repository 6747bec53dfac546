import type { FastifyInstance } from 'fastify';
import { startPeriodicTask, startRetryingTask } from '../../../infra/backoff.js';
import { finishDatasetDeletions } from '../cascade.js';
import type { DatasetsContext } from '../context.js';

const RETRY = { firstMs: 2_000, maxMs: 60_000 };
const SWEEP_INTERVAL_MS = 10 * 60_000;
/** The periodic sweep leaves younger deletions to the request that is still running them. */
const SWEEP_GRACE_MS = 5 * 60_000;

/**
 * Finishes dataset deletions that a crash interrupted: once at start, in the background (the
 * crashed process's tree lock may take up to 15 s to expire; readiness does not wait), retried
 * with backoff; then periodically, for deletions a database error stopped in a live process.
 */
export function registerDatasetDeletionResume(api: FastifyInstance, ctx: DatasetsContext): void {
  let resume: { stop(): Promise<void> } | undefined;
  let sweep: { stop(): void } | undefined;
  let closing = false;
  const stopped = () => closing;
  const onFailure = (error: unknown) => api.opsMetrics.databaseError('dataset-delete-resume', error);

  api.startup.add('datasets: finish interrupted deletes', async () => {
    resume = startRetryingTask({
      name: 'finishing interrupted dataset deletes',
      retry: RETRY,
      log: api.log,
      onFailure,
      run: async (control) => {
        const finished = await finishDatasetDeletions(ctx, { stopped: control.stopped });
        if (finished > 0) api.log.info(`finished ${finished} interrupted dataset delete(s)`);
      },
    });
    sweep = startPeriodicTask({
      name: 'unfinished dataset delete sweep',
      intervalMs: SWEEP_INTERVAL_MS,
      task: () => finishDatasetDeletions(ctx, { createdBefore: new Date(Date.now() - SWEEP_GRACE_MS), stopped }),
      log: api.log,
      onFailure,
    });
  });
  // The current dataset's purge ends while the database is still open; the rest waits for the next start.
  api.addHook('preClose', async () => {
    closing = true;
    sweep?.stop();
    await resume?.stop();
  });
}
