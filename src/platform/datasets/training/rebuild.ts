/** The chain of a dataset's rebuild (training/rebuildEmbedding): one flagged item queued at a time per link. */
import type { DatasetsContext } from '../context.js';
import type { NewTraining } from './training.repo.js';

/** A rebuild's queue item without the data item it re-embeds. */
export type RebuildItem = Omit<NewTraining, 'collectionId' | 'dataId' | 'chunkIndex' | 'q' | 'a' | 'indexes'>;

/**
 * Queues the next data item of the dataset still flagged for its rebuild; false when none waits.
 * A claimed item whose queue insert fails is flagged again (best effort), so it is not left with
 * the old model's vectors while the rest of the dataset moves on.
 */
export async function queueNextRebuild(ctx: DatasetsContext, item: RebuildItem): Promise<boolean> {
  const { data, trainings } = ctx.repos;
  const next = await data.claimRebuilding(item.teamId, item.datasetId);
  if (!next) return false;
  try {
    await trainings.insertMany([{ ...item, collectionId: next.collectionId, dataId: next._id, q: '1', a: '', indexes: [], chunkIndex: next.chunkIndex }]);
  } catch (error) {
    await data.flagRebuilding(item.teamId, next._id).catch(() => undefined);
    throw error;
  }
  return true;
}
