import type { CollectionRecord } from './collections/collection.repo.js';
import type { DatasetsContext } from './context.js';

/**
 * Deletes collections with everything that hangs off them. Children go first (queue items, so
 * the worker stops producing data; vectors; data; files and images) and the collections last:
 * a crash midway leaves the collection in place to delete again, never orphans pointing nowhere.
 * Every step is filtered by the team, so ids shared with another team's records never reach them.
 */
export async function deleteCollectionsCascade(ctx: DatasetsContext, teamId: string, collections: CollectionRecord[]): Promise<void> {
  if (collections.length === 0) return;
  const ids = collections.map((collection) => collection._id);
  const { trainings, vectors, data, files, collections: repo } = ctx.repos;
  await trainings.deleteByCollections(teamId, ids);
  await vectors.deleteByCollections(teamId, ids);
  await ctx.searchIndex.removeCollections(collections);
  await data.deleteByCollections(teamId, ids);
  // A file imported twice (two collections, one fileId) stays while another collection uses it.
  const fileIds = [...new Set(collections.flatMap((collection) => (collection.fileId ? [collection.fileId] : [])))];
  const stillUsed = new Set(await repo.fileIdsUsedElsewhere(teamId, fileIds, ids));
  await files.deleteMany('dataset', teamId, fileIds.filter((id) => !stillUsed.has(id)));
  await files.deleteImagesRelated(
    teamId,
    collections.flatMap((collection) => {
      const related = collection.metadata.relatedImgId;
      return typeof related === 'string' ? [related] : [];
    }),
  );
  await repo.deleteMany(teamId, ids);
}

/**
 * Deletes datasets (ids: a dataset and its descendants, parents before children) with their
 * collections and permission rows; returns how many non-folder datasets went (plan room to give
 * back). Deepest first, each dataset last after its content, so a crash never leaves a child
 * whose parent is gone. Each dataset's part runs under its collection-tree lock: a collection
 * create racing the delete either lands before (and is deleted) or finds the dataset gone.
 */
export async function deleteDatasetsCascade(ctx: DatasetsContext, teamId: string, datasetIds: string[]): Promise<number> {
  const { trainings, vectors, data, collections, datasets } = ctx.repos;
  const types = new Map((await datasets.byIds(teamId, datasetIds)).map((dataset) => [dataset._id, dataset.type]));
  let removedDatasets = 0;
  for (const id of [...datasetIds].reverse()) {
    const type = types.get(id);
    if (!type) continue;
    if (type === 'folder') {
      await ctx.permissions.deleteAllFor(teamId, [id]);
      await datasets.deleteMany(teamId, [id]);
      continue;
    }
    await ctx.withCollectionTree(id, async () => {
      await trainings.deleteByDatasets(teamId, [id]);
      await vectors.deleteByDatasets(teamId, [id]);
      await ctx.searchIndex.dropDataset(id);
      await data.deleteByDatasets(teamId, [id]);
      await deleteCollectionsCascade(ctx, teamId, await collections.byDatasets(teamId, [id]));
      await ctx.permissions.deleteAllFor(teamId, [id]);
      removedDatasets += await datasets.deleteMany(teamId, [id]);
    });
  }
  return removedDatasets;
}
