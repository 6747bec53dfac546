import type { DatasetsContext } from '../context.js';
import { uniqueBy } from '../../../domain/unique-by.js';

/**
 * A dataset delete removes the dataset document first and its content after (cascade.ts). A
 * worker write landing after that sweep would stay behind, so the worker checks, after writing,
 * that the datasets still exist, and removes what it wrote into deleted ones: whichever of the
 * two runs last cleans up. Returns the deleted datasets found.
 */
export async function removeWritesOfDeletedDatasets(ctx: DatasetsContext, items: { teamId: string; datasetId: string }[]): Promise<Set<string>> {
  const gone = new Set<string>();
  if (items.length === 0) return gone;
  const { datasets, trainings, vectors, data } = ctx.repos;
  const owners = uniqueBy(items, (item) => item.datasetId);
  const existing = await datasets.existingIds(owners.map((owner) => owner.datasetId));
  for (const { teamId, datasetId } of owners) {
    if (existing.has(datasetId)) continue;
    gone.add(datasetId);
    await trainings.deleteByDatasets(teamId, [datasetId]);
    await vectors.deleteByDatasets(teamId, [datasetId]);
    await ctx.searchIndex.dropDataset(datasetId);
    await data.deleteByDatasets(teamId, [datasetId]);
  }
  return gone;
}

/**
 * The same for collections: a collection delete removes the content, then the collection, then
 * once more the vectors and data (deleteCollectionsCascade). A write that checks its collection
 * after landing either sees it gone and removes itself, or landed before that last pass.
 * Returns the deleted collections found.
 */
export async function removeWritesOfDeletedCollections(
  ctx: DatasetsContext,
  items: { teamId: string; datasetId: string; collectionId: string }[],
): Promise<Set<string>> {
  const gone = new Set<string>();
  if (items.length === 0) return gone;
  const { collections, trainings, vectors, data } = ctx.repos;
  const owners = uniqueBy(items, (item) => item.collectionId);
  const existing = await collections.existingIds(owners.map((owner) => owner.collectionId));
  for (const { teamId, datasetId, collectionId } of owners) {
    if (existing.has(collectionId)) continue;
    gone.add(collectionId);
    // Out of the search index first: the collection is gone for good, so a crash after this
    // leaves rows nobody can reach rather than search results from a deleted collection.
    await ctx.searchIndex.removeCollections([{ _id: collectionId, datasetId }]);
    await trainings.deleteByCollections(teamId, [{ _id: collectionId, datasetId }]);
    await vectors.deleteByCollections(teamId, [collectionId]);
    await data.deleteByCollections(teamId, [collectionId]);
  }
  return gone;
}

/** Both checks, for writers into collections (the training worker, data/insertData). */
export async function removeWritesOfDeletedOwners(ctx: DatasetsContext, items: { teamId: string; datasetId: string; collectionId: string }[]) {
  const datasets = await removeWritesOfDeletedDatasets(ctx, items);
  const collections = await removeWritesOfDeletedCollections(
    ctx,
    items.filter((item) => !datasets.has(item.datasetId)),
  );
  return { datasets, collections };
}
