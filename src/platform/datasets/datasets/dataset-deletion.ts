import type { FastifyInstance } from 'fastify';
import { backoffDelay, startPeriodicTask } from '../../../infra/backoff.js';
import { describeError } from '../../../infra/database-errors.js';
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
  let closing = false;
  let sweep: { stop(): void } | undefined;
  let running: Promise<void> | undefined;
  let wake: (() => void) | undefined;
  const stopped = () => closing;
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  api.startup.add('datasets: finish interrupted deletes', async () => {
    running = (async () => {
      for (let failures = 0; !closing; ) {
        try {
          const finished = await finishDatasetDeletions(ctx, { stopped });
          if (finished > 0) api.log.info(`finished ${finished} interrupted dataset delete(s)`);
          return;
        } catch (error) {
          if (closing) return;
          failures += 1;
          api.opsMetrics.databaseError('dataset-delete-resume', error);
          const delay = backoffDelay(failures, RETRY);
          api.log.warn(`finishing interrupted dataset deletes failed (${failures} in a row, next try in ${Math.round(delay / 1000)} s): ${describeError(error)}`);
          await pause(delay);
        }
      }
    })();
    sweep = startPeriodicTask({
      name: 'unfinished dataset delete sweep',
      intervalMs: SWEEP_INTERVAL_MS,
      task: () => finishDatasetDeletions(ctx, { createdBefore: new Date(Date.now() - SWEEP_GRACE_MS), stopped }),
      log: api.log,
      onFailure: (error) => api.opsMetrics.databaseError('dataset-delete-resume', error),
    });
  });
  // The current dataset's purge ends while the database is still open; the rest waits for the next start.
  api.addHook('preClose', async () => {
    closing = true;
    sweep?.stop();
    wake?.();
    await running;
  });
}
