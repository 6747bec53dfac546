import { describe, expect, it } from 'vitest';
import type { DataRepo } from '../../src/platform/datasets/data/data.repo.js';
import { createDatasetIndex, type IndexedItem } from '../../src/platform/datasets/search/dataset-index.js';
import type { VectorRepo, VectorRow } from '../../src/platform/datasets/search/vector.repo.js';

const item = (id: string, tokens: string[]): IndexedItem => ({
  _id: id,
  datasetId: 'd1',
  collectionId: 'c1',
  q: id,
  a: '',
  chunkIndex: 0,
  fullTextTokens: tokens,
});
const vector = (id: string, dataId: string, values: number[]): VectorRow => ({
  id,
  teamId: 't1',
  datasetId: 'd1',
  collectionId: 'c1',
  dataId,
  model: 'm',
  vector: values,
});

/** Repositories whose streams stop halfway until the test lets them go on, like a slow load. */
function slowRepos(stored: { items: IndexedItem[]; vectors: VectorRow[] }) {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let started!: () => void;
  const loading = new Promise<void>((resolve) => {
    started = resolve;
  });
  const data = {
    async *streamDataset() {
      started();
      await gate;
      yield* stored.items;
    },
  } as unknown as DataRepo;
  const vectors = {
    async *streamDataset() {
      yield* stored.vectors;
    },
  } as unknown as VectorRepo;
  return { repos: { data, vectors }, release, loading };
}

describe('dataset search index loading', () => {
  it('keeps writes made while the dataset is loading', async () => {
    const { repos, release, loading } = slowRepos({ items: [item('old', ['alpha'])], vectors: [vector('v-old', 'old', [1, 0])] });
    const index = createDatasetIndex(repos);
    const warming = index.warm('d1', 'm');
    await loading;
    // Written during the load: must not be lost when the load finishes.
    index.putItems([item('new', ['beta'])]);
    index.addVectors([vector('v-new', 'new', [0, 1])]);
    index.removeItems('d1', ['old']);
    release();
    await warming;

    const byText = await index.fullTextSearch(['d1'], 'm', ['beta'], 5, new Set());
    expect(byText.map((hit) => hit.item._id)).toEqual(['new']);
    expect(await index.fullTextSearch(['d1'], 'm', ['alpha'], 5, new Set())).toEqual([]);
    const byVector = await index.vectorSearch(['d1'], 'm', [0, 1], 5, new Set());
    expect(byVector[0]?.item._id).toBe('new');
  });

  it('applies writes directly once loaded, and ignores writes for datasets never loaded', async () => {
    const { repos, release } = slowRepos({ items: [], vectors: [] });
    release();
    const index = createDatasetIndex(repos);
    index.putItems([item('early', ['gamma'])]); // not loaded yet: MongoDB has it, the load will read it
    await index.warm('d1', 'm');
    index.putItems([item('late', ['gamma'])]);
    const hits = await index.fullTextSearch(['d1'], 'm', ['gamma'], 5, new Set());
    expect(hits.map((hit) => hit.item._id)).toEqual(['late']);
  });
});
