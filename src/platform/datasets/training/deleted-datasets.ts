import type { DatasetsContext } from '../context.js';
import { uniqueBy } from '../plain.js';

/**
 * A dataset delete removes the dataset document first and its content after (cascade.ts). A
 * worker write landing after that sweep would stay behind, so the worker checks, after writing,
 * that the datasets still exist, and removes what it wrote into deleted ones: whichever of the
 * two runs last cleans up.
 */
export async function removeWritesOfDeletedDatasets(ctx: DatasetsContext, items: { teamId: string; datasetId: string }[]): Promise<void> {
  if (items.length === 0) return;
  const { datasets, trainings, vectors, data } = ctx.repos;
  const owners = uniqueBy(items, (item) => item.datasetId);
  const existing = await datasets.existingIds(owners.map((owner) => owner.datasetId));
  for (const { teamId, datasetId } of owners) {
    if (existing.has(datasetId)) continue;
    await trainings.deleteByDatasets(teamId, [datasetId]);
    await vectors.deleteByDatasets(teamId, [datasetId]);
    ctx.searchIndex.drop([datasetId]);
    await data.deleteByDatasets(teamId, [datasetId]);
  }
}
