/** The chain of a dataset's rebuild (training/rebuildEmbedding): one flagged item queued at a time per link. */
import type { DatasetsContext } from '../context.js';
import type { NewTraining, TrainingRecord } from './training.repo.js';

/** A rebuild's queue item without the data item it re-embeds. */
export type RebuildItem = Omit<NewTraining, 'collectionId' | 'dataId' | 'chunkIndex' | 'q' | 'a' | 'indexes'>;

/**
 * Queues the next data item of the dataset still flagged for its rebuild; false when none waits.
 * The item is queued first (under an id derived from it: idempotent), then unflagged, so a
 * process killed in between leaves it queued and flagged, never neither. An item another chain
 * queued already is unflagged here too and the next one is tried, so no chain link is lost.
 */
export async function queueNextRebuild(ctx: DatasetsContext, item: RebuildItem): Promise<boolean> {
  const { data, trainings } = ctx.repos;
  for (;;) {
    const next = await data.nextRebuilding(item.teamId, item.datasetId);
    if (!next) return false;
    const queued = await trainings.insertRebuild({ ...item, collectionId: next.collectionId, dataId: next._id, q: '1', a: '', indexes: [], chunkIndex: next.chunkIndex }, next.indexes.map((index) => index.dataId));
    await data.clearRebuilding(item.teamId, next);
    if (queued) return true;
  }
}

/**
 * The link after a rebuild queue item, queued before that item leaves the queue (re-embedded,
 * dropped because its data item or collection went, or given up after failing): a chain ends only
 * when nothing flagged is left, whatever happened to one of its items. A crash before the item
 * leaves only means this runs again for it (at worst one more chain, never an item queued twice).
 */
export async function continueRebuildChain(ctx: DatasetsContext, item: TrainingRecord): Promise<void> {
  if (!item.dataId) return;
  const { _id, expireAt, lockTime, retryCount, errorMsg, failed, stopped, collectionId, dataId, chunkIndex, q, a, indexes, sourceId, qaPairs, ...base } = item;
  await queueNextRebuild(ctx, base);
}
