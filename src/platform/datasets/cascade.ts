import { groupBy } from '../../domain/group-by.js';
import type { LockHold } from '../../infra/mongo-lock.js';
import type { CollectionRecord } from './collections/collection.repo.js';
import type { DatasetsContext } from './context.js';
import type { DatasetDeletion } from './datasets/dataset.repo.js';
import { dataListStampKey } from './data/data-list.read-model.js';
import { searchStampKey } from './search/dataset-index.js';
import { withIndexWrite } from './search/index-writes.js';

/**
 * Deletes collections with everything that hangs off them. Children go first (queue items, so
 * the worker stops producing data; vectors and data, with their removal from the search index;
 * files and images) and the collections last: a crash midway leaves the collection in place to
 * delete again, never orphans pointing nowhere. Vectors and data are deleted once more after the
 * collections (writes that raced the delete). Every step is filtered by the team, so ids shared
 * with another team's records never reach them. `lock`: the lock the caller holds over the
 * collections, if any; a holder that lost it stops before the first step and before the
 * collections go (the subtree it read may have changed), as a crash would. `keepFiles`: for a
 * collection whose import failed after creating it, whose file was there before the import and
 * is imported again by a retry.
 */
export async function deleteCollectionsCascade(
  ctx: DatasetsContext,
  teamId: string,
  collections: CascadedCollection[],
  lock?: LockHold,
  options: { keepFiles?: boolean } = {},
): Promise<void> {
  if (collections.length === 0) return;
  const ids = collections.map((collection) => collection._id);
  const { trainings, files, collections: repo } = ctx.repos;
  lock?.assertHeld();
  await trainings.deleteByCollections(teamId, collections);
  await deleteCollectionContent(ctx, teamId, collections);
  if (!options.keepFiles) {
    // A file imported twice (two collections, one fileId) stays while another collection uses it.
    const fileIds = [...new Set(collections.flatMap((collection) => (collection.fileId ? [collection.fileId] : [])))];
    const stillUsed = new Set(await repo.fileIdsUsedElsewhere(teamId, fileIds, ids));
    const leaving = fileIds.filter((id) => !stillUsed.has(id));
    await files.deleteMany('dataset', teamId, leaving);
    // A file's images (a document's pictures) are related to the file's id, as an import records
    // it in `metadata.relatedImgId`: they go with the file. The metadata itself is not read here, as
    // a client may write any value there (another collection's file, whose images would go).
    await files.deleteImagesRelated(teamId, leaving);
  }
  lock?.assertHeld();
  await repo.deleteMany(teamId, ids);
  // Writers that checked the collection before it went (training worker, data/insertData) may
  // have landed after the first pass; they check again after writing, so this pass and theirs
  // leave nothing behind whichever runs last.
  await deleteCollectionContent(ctx, teamId, collections);
  await ctx.repos.stamps.remove(...ids.map(dataListStampKey));
}

/** What the cascade reads of a collection. */
type CascadedCollection = Pick<CollectionRecord, '_id' | 'datasetId' | 'fileId'>;

/**
 * The collections' vectors and data items, and their removal from the search index: one index
 * write per dataset (search/index-writes.ts), which a repair finishes if the process dies in it.
 */
async function deleteCollectionContent(ctx: DatasetsContext, teamId: string, collections: CascadedCollection[]): Promise<void> {
  for (const group of groupBy(collections, (collection) => collection.datasetId).values()) {
    const ids = group.map((collection) => collection._id);
    await withIndexWrite(ctx, group[0]!.datasetId, { teamId, collections: ids }, async (ctx) => {
      const { vectors, data } = ctx.repos;
      await vectors.deleteByCollections(teamId, ids);
      await data.deleteByCollections(teamId, ids);
      await ctx.searchIndex.removeCollections(group);
    });
  }
}

/**
 * Starts deleting a dataset and its descendants; the caller holds the team's dataset-tree lock
 * (`lock`), so nothing is created or moved into the subtree meanwhile. Write order: a deletion
 * record naming every dataset of the subtree, then the dataset documents. From that write on
 * nothing of the subtree can be listed, read or searched (collections, data, files and searches
 * all go through their dataset), so the content left behind is invisible until
 * purgeDeletedDatasets removes it, and a crash in between, or a holder that lost the lock and
 * stopped, is finished by finishDatasetDeletions.
 */
export async function startDatasetDeletion(ctx: DatasetsContext, lock: LockHold, teamId: string, datasetId: string): Promise<DatasetDeletion> {
  const subtree = await ctx.repos.datasets.withDescendants(teamId, datasetId);
  lock.assertHeld();
  const deletion = await ctx.repos.datasets.recordDeletion(teamId, subtree);
  await hideDatasets(ctx, lock, deletion);
  return deletion;
}

/** Deletes the dataset documents (a repeat deletes nothing) and gives their plan room back. */
async function hideDatasets(ctx: DatasetsContext, lock: LockHold, deletion: DatasetDeletion): Promise<void> {
  lock.assertHeld();
  const removed = await ctx.repos.datasets.deleteMany(deletion.teamId, deletion.datasetIds);
  for (const id of deletion.datasetIds) await ctx.searchIndex.dropDataset(id);
  if (removed > 0) await ctx.teamLimits.releaseDatasets(deletion.teamId, removed);
}

/**
 * Deletes everything the deleted datasets held, then the deletion record. Each dataset's
 * collection-tree lock is taken once first: a collection create that checked the dataset before
 * it went has then finished, and any later one finds the dataset gone. Every step is idempotent
 * and filtered by the team.
 */
export async function purgeDeletedDatasets(ctx: DatasetsContext, deletion: DatasetDeletion): Promise<void> {
  const { teamId, datasetIds: ids } = deletion;
  const { trainings, vectors, data, collections, datasets } = ctx.repos;
  for (const id of ids) await ctx.withCollectionTree(id, async () => undefined);
  await trainings.deleteByDatasets(teamId, ids);
  await vectors.deleteByDatasets(teamId, ids);
  await data.deleteByDatasets(teamId, ids);
  await deleteCollectionsCascade(ctx, teamId, await collections.byDatasets(teamId, ids));
  // After the collections: their cascade logs its removals to the index this drops.
  for (const id of ids) await ctx.searchIndex.dropDataset(id);
  await ctx.repos.stamps.remove(...ids.map(searchStampKey));
  await ctx.permissions.deleteAllFor(teamId, ids);
  await datasets.finishDeletion(deletion._id);
}

/**
 * Finishes deletions a crash (or a failed request) left unfinished: hides what is still visible,
 * under the tree lock and with any child created into the subtree before the hide took effect,
 * then purges. `createdBefore` skips deletions a live request may still be running.
 */
export async function finishDatasetDeletions(ctx: DatasetsContext, options: { createdBefore?: Date; stopped?: () => boolean } = {}): Promise<number> {
  const { datasets } = ctx.repos;
  let finished = 0;
  for (const recorded of await datasets.unfinishedDeletions(options.createdBefore)) {
    if (options.stopped?.()) break;
    const deletion = await ctx.withDatasetTree(recorded.teamId, async (lock) => {
      const [root] = recorded.datasetIds;
      const ids = [...new Set([...recorded.datasetIds, ...(root ? await datasets.withDescendants(recorded.teamId, root) : [])])];
      lock.assertHeld();
      if (ids.length > recorded.datasetIds.length) await datasets.setDeletionDatasets(recorded._id, ids);
      const current = { ...recorded, datasetIds: ids };
      await hideDatasets(ctx, lock, current);
      return current;
    });
    await purgeDeletedDatasets(ctx, deletion);
    finished += 1;
  }
  return finished;
}
