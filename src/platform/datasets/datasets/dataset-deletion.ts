import type { FastifyInstance } from 'fastify';
import { registerResumeTask } from '../../../plugins/resume-task.js';
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
  // The current dataset's purge ends while the database is still open; the rest waits for the next start.
  registerResumeTask(api, {
    startupName: 'datasets: finish interrupted deletes',
    resumeName: 'finishing interrupted dataset deletes',
    sweepName: 'unfinished dataset delete sweep',
    source: 'dataset-delete-resume',
    retry: RETRY,
    sweepIntervalMs: SWEEP_INTERVAL_MS,
    async resume({ stopped }) {
      const finished = await finishDatasetDeletions(ctx, { stopped });
      if (finished > 0) api.log.info(`finished ${finished} interrupted dataset delete(s)`);
    },
    sweep: (stopped) => finishDatasetDeletions(ctx, { createdBefore: new Date(Date.now() - SWEEP_GRACE_MS), stopped }),
  });
}
