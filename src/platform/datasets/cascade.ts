import type { CollectionRecord } from './collections/collection.repo.js';
import type { DatasetsContext } from './context.js';

/**
 * Deletes collections with everything that hangs off them. Children go first (queue items, so
 * the worker stops producing data; vectors; data; files and images) and the collections last:
 * a crash midway leaves the collection in place to delete again, never orphans pointing nowhere.
 */
export async function deleteCollectionsCascade(ctx: DatasetsContext, teamId: string, collections: CollectionRecord[]): Promise<void> {
  if (collections.length === 0) return;
  const ids = collections.map((collection) => collection._id);
  const { trainings, vectors, data, files, collections: repo } = ctx.repos;
  await trainings.deleteByCollections(teamId, ids);
  await vectors.deleteByCollections(teamId, ids);
  ctx.searchIndex.drop([...new Set(collections.map((collection) => collection.datasetId))]);
  await data.deleteByCollections(teamId, ids);
  await files.deleteMany('dataset', collections.flatMap((collection) => (collection.fileId ? [collection.fileId] : [])));
  await files.deleteImagesRelated(
    teamId,
    collections.flatMap((collection) => {
      const related = collection.metadata.relatedImgId;
      return typeof related === 'string' ? [related] : [];
    }),
  );
  await repo.deleteMany(teamId, ids);
}

/** Deletes datasets (ids include descendants) with their collections and permission rows, datasets last. */
export async function deleteDatasetsCascade(ctx: DatasetsContext, teamId: string, datasetIds: string[]): Promise<void> {
  const { trainings, vectors, data, collections, datasets } = ctx.repos;
  await trainings.deleteByDatasets(teamId, datasetIds);
  await vectors.deleteByDatasets(teamId, datasetIds);
  ctx.searchIndex.drop(datasetIds);
  await data.deleteByDatasets(teamId, datasetIds);
  await deleteCollectionsCascade(ctx, teamId, await collections.byDatasets(teamId, datasetIds));
  await ctx.permissions.deleteAllFor(teamId, datasetIds);
  await datasets.deleteMany(teamId, datasetIds);
}
