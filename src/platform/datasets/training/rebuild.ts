/** The chain of a dataset's rebuild (training/rebuildEmbedding): one flagged item queued at a time per link. */
import type { VectorModel } from '../../../domain/models.js';
import { Errors } from '../../../infra/errors.js';
import type { DatasetsContext } from '../context.js';
import { withIndexWrite } from '../search/index-writes.js';
import type { NewTraining, TrainingRecord } from './training.repo.js';

/** Rebuild items kept in flight; each finished one queues the next (as the reference's rebuild; docs/datasets.md). */
const REBUILD_IN_FLIGHT = 20;

/** A rebuild's queue item without the data item it re-embeds. */
export type RebuildItem = Omit<NewTraining, 'collectionId' | 'dataId' | 'chunkIndex' | 'q' | 'a' | 'indexes' | 'textChars'>;

/**
 * Switches the dataset's vector model and starts re-embedding every item (training/rebuildEmbedding).
 * Checked, flagged, switched and first queued under the dataset's index write lock, from the
 * dataset as stored: a second rebuild waits and then finds the queue busy (two at once would
 * each flag and switch, leaving items split between models), and every writer that embeds
 * checks the model under the same lock (data-writer.ts onCurrentModel) before it stores.
 */
export async function startRebuild(ctx: DatasetsContext, input: { teamId: string; tmbId: string; datasetId: string }, model: VectorModel): Promise<void> {
  const { teamId, datasetId } = input;
  await withIndexWrite(ctx, datasetId, undefined, async (ctx) => {
    const { data, trainings, datasets } = ctx.repos;
    const [current, rebuilding, queued] = await Promise.all([datasets.vectorModelOf(teamId, datasetId), data.countRebuilding(teamId, datasetId), trainings.countByDataset(teamId, datasetId)]);
    if (current === null) throw Errors.unExistDataset();
    if (queued > 0) throw Errors.conflict('The dataset is training or rebuilding; try again when the queue is empty');
    // Flagged items with nothing queued: a rebuild stopped part-way (a failure between its steps).
    // It starts over: every item flagged again, so none keeps another model's vectors.
    if (rebuilding === 0 && model.model === current) throw Errors.missingParams(`Invalid field 'vectorModel': the dataset already uses ${model.model}`);
    // Flag first, then switch: each step can be done again by a retry.
    await data.markRebuilding(teamId, datasetId);
    await datasets.update(teamId, datasetId, { vectorModel: model.model });
    await ctx.searchIndex.switchModel(datasetId, model.model);
    const item = { ...input, billId: '', mode: 'chunk' as const, model: model.model, prompt: '', weight: model.weight ?? 0 };
    for (let i = 0; i < REBUILD_IN_FLIGHT; i++) if (!(await queueNextRebuild(ctx, item))) break;
  });
  ctx.wakeWorker();
}

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
    // Its size is what the worker embeds, the data item's indexes: claims bound batches by it.
    const textChars = next.indexes.reduce((sum, index) => sum + index.text.length, 0);
    const queued = await trainings.insertRebuild(
      { ...item, collectionId: next.collectionId, dataId: next._id, q: '1', a: '', indexes: [], chunkIndex: next.chunkIndex, textChars },
      next.indexes.map((index) => index.dataId),
    );
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
  const { _id, expireAt, lockTime, retryCount, errorMsg, failed, stopped, collectionId, dataId, chunkIndex, q, a, indexes, textChars, sourceId, qaPairs, ...base } = item;
  await queueNextRebuild(ctx, base);
}
