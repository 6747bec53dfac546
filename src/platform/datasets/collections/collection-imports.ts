import type { FastifyInstance } from 'fastify';
import { registerResumeTask } from '../../../plugins/resume-task.js';
import { deleteCollectionsCascade } from '../cascade.js';
import type { DatasetsContext } from '../context.js';

/**
 * How long an import's intent stands without a renewal (renewed every third of it): longer than
 * any pause of a running import between two batches, and long enough that a renewal racing the
 * sweep at a lease's end (FerretDB reads, then writes, a conditional update) takes a stall of 20 s.
 */
export const IMPORT_LEASE_MS = 30_000;
const RETRY = { firstMs: 1_000, maxMs: 30_000 };
const SWEEP_INTERVAL_MS = 60_000;

/**
 * Settles the imports whose lease lapsed; returns how many. One that had not queued all its
 * items is taken back (queue items, data, vectors, the collection last; its file stays, as a
 * retry imports it again; an unused one goes with the unused-file sweep). A link sync's
 * replacement that had (`queued`) is finished: the collection it replaces is deleted, then its
 * intent removed, so it never stays beside the old one.
 */
export async function settleLapsedImports(ctx: DatasetsContext, options: { stopped?: () => boolean } = {}): Promise<number> {
  const { collections } = ctx.repos;
  let settled = 0;
  for (const lapsed of await collections.lapsedImports()) {
    if (options.stopped?.()) break;
    if (lapsed.queued) {
      const old = lapsed.replaces ? await collections.findById(lapsed.teamId, lapsed.replaces) : null;
      if (old) await deleteCollectionsCascade(ctx, lapsed.teamId, [old]);
      await collections.endImport(lapsed._id, false);
    } else {
      await deleteCollectionsCascade(ctx, lapsed.teamId, [lapsed], undefined, { keepFiles: true });
    }
    settled += 1;
  }
  return settled;
}

/**
 * Settles imports a crash interrupted (collection-import.service.ts insertWithItems): at start,
 * in the background, once the leases of the imports already there have run out (readiness does
 * not wait), retried with backoff; then every minute, for imports of a process that stalled or
 * lost its database.
 */
export function registerImportResume(api: FastifyInstance, ctx: DatasetsContext): void {
  registerResumeTask(api, {
    startupName: 'datasets: settle interrupted imports',
    resumeName: 'settling interrupted collection imports',
    sweepName: 'interrupted collection import sweep',
    source: 'collection-import-resume',
    retry: RETRY,
    sweepIntervalMs: SWEEP_INTERVAL_MS,
    async resume({ stopped, pause }, startedAt) {
      const settled = await settleLapsedImports(ctx, { stopped });
      if (settled > 0) api.log.info(`settled ${settled} interrupted collection import(s)`);
      // Imports of a killed process still inside their lease: wait for it to run out.
      const lastLease = await ctx.repos.collections.lastImportLeaseEnd(startedAt);
      if (!lastLease) return false;
      await pause(Math.max(0, lastLease.getTime() - Date.now()) + 100);
      return true;
    },
    sweep: (stopped) => settleLapsedImports(ctx, { stopped }),
  });
}
