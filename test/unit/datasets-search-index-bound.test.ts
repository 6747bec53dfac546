import { describe, expect, it } from 'vitest';
import type { CollectionRepo } from '../../src/platform/datasets/collections/collection.repo.js';
import type { DataRepo } from '../../src/platform/datasets/data/data.repo.js';
import { DatasetEntry, ENTRY_BYTES, type IndexedItem, itemBytes } from '../../src/platform/datasets/search/dataset-entry.js';
import { createDatasetIndex } from '../../src/platform/datasets/search/dataset-index.js';
import { captureSnapshot, decodeSnapshot, encodeSnapshot } from '../../src/platform/datasets/search/index-codec.js';
import type { VectorRepo, VectorRow } from '../../src/platform/datasets/search/vector.repo.js';
import { memoryStamps, memoryStore } from '../helpers/search-index-memory.js';

/**
 * The bound on the memory of a process's open search indexes (SEARCH_INDEX_MAX_BYTES): the least
 * recently searched are evicted, and an evicted dataset reopens from its snapshot and log with
 * every write made meanwhile, by this process or another.
 */
/** 100 ASCII characters: an item weighs 400 + 100 x 20 = 2,400 estimated bytes. */
const ITEM_WEIGHT = 2400;
const item = (datasetId: string, id: string, word: string): IndexedItem => ({ _id: id, datasetId, collectionId: `${datasetId}-c`, q: `${word} `.padEnd(100, '.'), a: '', chunkIndex: 0 });
const vector = (datasetId: string, id: string, dataId: string, values: number[]): VectorRow => ({ id, teamId: 't1', datasetId, collectionId: `${datasetId}-c`, dataId, model: 'm', vector: values });

/** Each dataset's data items (10 of 2,400 bytes: 24,000 a dataset) and one vector. */
function sources(datasetIds: string[]) {
  const items = new Map(datasetIds.map((id) => [id, Array.from({ length: 10 }, (_, n) => item(id, `${id}-i${n}`, `${id}word${n}`))]));
  const streamed = new Map<string, number>();
  const data = {
    async *streamDataset(datasetId: string) {
      streamed.set(datasetId, (streamed.get(datasetId) ?? 0) + 1);
      yield* (items.get(datasetId) ?? []).map((entry) => ({ ...entry, fullTextTokens: undefined }));
    },
  } as unknown as DataRepo;
  const vectors = {
    async *streamDataset(datasetId: string) {
      if (items.has(datasetId)) yield vector(datasetId, `${datasetId}-v`, `${datasetId}-i0`, [1, 0]);
    },
  } as unknown as VectorRepo;
  const collections = { byDatasets: async () => [] } as unknown as CollectionRepo;
  const datasets = { existingIds: async (ids: string[]) => new Set(ids) };
  return { data, vectors, collections, datasets, streamed };
}

const DATASETS = ['d1', 'd2', 'd3', 'd4', 'd5'];
/** Items, the entry's fixed share, and vector storage at its first capacity (64 rows of 8 floats + a score). */
const DATASET_WEIGHT = ENTRY_BYTES + 10 * ITEM_WEIGHT + 64 * (8 * 4 + 4) + 150;
/** 64 rows of 256 floats and a score each: the vector storage's first capacity. */
const ROWS_256 = 64 * (256 * 4 + 4);

function world() {
  const memory = memoryStore();
  const shared = { store: memory.store, stamps: memoryStamps() };
  const source = sources(DATASETS);
  const processOf = (maxBytes: number) => {
    const logs: string[] = [];
    const index = createDatasetIndex(
      { ...source, ...shared, bumps: shared.stamps, log: { info: (line) => void logs.push(line), warn: () => undefined } },
      { minRows: 1_000_000, maxChanges: 1_000_000, maxBytes },
    );
    return { index, logs };
  };
  /** Waits until the dataset has a stored snapshot (written in the background after its first open). */
  const snapshotted = async (datasetId: string) => {
    while (!(await memory.store.meta(datasetId))?.snapshot) await new Promise((resolve) => setImmediate(resolve));
  };
  return { memory, source, processOf, snapshotted };
}

const ids = (hits: { item: IndexedItem }[]) => hits.map((hit) => hit.item._id);
type Index = ReturnType<typeof createDatasetIndex>;
const text = (index: Index, datasetId: string, token: string) => index.fullTextSearch([datasetId], 'm', [token], 10, new Set()).then(ids);
const loaded = (index: Index) => DATASETS.filter((id) => index.isLoaded(id));

describe('search index memory bound', () => {
  it('estimates an entry from its items and vectors, kept current as changes apply, the same when restored from a snapshot', async () => {
    const entry = new DatasetEntry('d1', 'm');
    entry.apply({ kind: 'putItems', items: [item('d1', 'a', 'alpha'), item('d1', 'b', 'beta')] });
    entry.apply({ kind: 'putVectors', model: 'm', vectors: [{ id: 'v', dataId: 'a', vector: new Array(256).fill(0.5) }] });
    expect(entry.estimatedBytes()).toBe(ENTRY_BYTES + 2 * ITEM_WEIGHT + ROWS_256 + 150);
    entry.apply({ kind: 'putItems', items: [{ ...item('d1', 'a', 'alpha'), q: '\u4e2d'.repeat(10) }] }); // replaced: 400 + 10 x 130
    // The replaced version's terms ('alpha' and the padding) are held, dead, until a compaction.
    const deadBytes = entry.text.deadTerms * 330;
    expect(entry.estimatedBytes()).toBe(ENTRY_BYTES + ITEM_WEIGHT + 1700 + ROWS_256 + 150 + deadBytes);
    expect(itemBytes({ ...item('d1', 'x', 'x'), a: 'ab' })).toBe(ITEM_WEIGHT + 40);
    const restored = await decodeSnapshot('d1', 'm', await encodeSnapshot(captureSnapshot(entry)));
    expect(restored.estimatedBytes()).toBe(entry.estimatedBytes() - deadBytes); // a snapshot holds live terms only
    entry.apply({ kind: 'removeItems', ids: ['a'] });
    entry.apply({ kind: 'removeVectors', ids: ['v'] });
    expect(entry.estimatedBytes()).toBe(ENTRY_BYTES + ITEM_WEIGHT + ROWS_256 + entry.text.deadTerms * 330);
    entry.apply({ kind: 'removeCollections', ids: ['d1-c'] });
    expect(entry.estimatedBytes()).toBe(ENTRY_BYTES + ROWS_256 + entry.text.deadTerms * 330);
  });

  it('evicts the least recently searched index past the bound; a search after eviction answers the same from the snapshot and log', async () => {
    const { memory, source, processOf, snapshotted } = world();
    const { index } = processOf(2 * DATASET_WEIGHT + 100);
    const before = { d1: await text(index, 'd1', 'd1word1'), d2: await text(index, 'd2', 'd2word2') };
    expect(before).toEqual({ d1: ['d1-i1'], d2: ['d2-i2'] });
    await Promise.all(['d1', 'd2'].map(snapshotted));
    await text(index, 'd1', 'd1word3'); // d1 searched last: d2 is the least recently searched
    expect(index.stats()).toMatchObject({ open: 2, evictions: 0 });
    await text(index, 'd3', 'd3word1');
    expect(loaded(index)).toEqual(['d1', 'd3']);
    expect(index.stats()).toMatchObject({ open: 2, bytes: 2 * DATASET_WEIGHT, evictions: 1 });

    const partsRead = memory.reads.parts;
    expect(await text(index, 'd2', 'd2word2')).toEqual(before.d2);
    expect(ids(await index.vectorSearch(['d2'], 'm', [1, 0], 5, new Set()))).toEqual(['d2-i0']);
    expect(memory.reads.parts).toBe(partsRead + 1); // reopened from its snapshot...
    expect(source.streamed.get('d2')).toBe(1); // ...not rebuilt from the data items
    expect(loaded(index)).toEqual(['d2', 'd3']); // d1, now the least recently searched, went
  });

  it('a write to an evicted dataset, through this process or another, is found by its next search', async () => {
    const { memory, processOf, snapshotted } = world();
    const { index } = processOf(DATASET_WEIGHT + 100);
    const other = processOf(10 * DATASET_WEIGHT).index;
    await text(index, 'd1', 'd1word1');
    await snapshotted('d1');
    await text(index, 'd2', 'd2word1');
    expect(loaded(index)).toEqual(['d2']);

    await index.putItems([item('d1', 'mine', 'writtenhere')]);
    await index.removeItems('d1', ['d1-i1']);
    await other.putItems([item('d1', 'theirs', 'writtenthere')]);
    await other.addVectors([vector('d1', 'v-theirs', 'theirs', [0, 1])]);
    expect(loaded(index)).toEqual(['d2']); // the writes opened nothing here
    expect([...memory.changes.values()].filter((change) => change.datasetId === 'd1')).toHaveLength(4);

    expect(await text(index, 'd1', 'writtenhere')).toEqual(['mine']);
    expect(await text(index, 'd1', 'writtenthere')).toEqual(['theirs']);
    expect(await text(index, 'd1', 'd1word1')).toEqual([]);
    expect(ids(await index.vectorSearch(['d1'], 'm', [0, 1], 1, new Set()))).toEqual(['theirs']);
    expect(loaded(index)).toEqual(['d1']);
  });

  it('a write landing while the evicted dataset reopens is applied to what it opens to', async () => {
    const { processOf, snapshotted } = world();
    const { index } = processOf(DATASET_WEIGHT + 100);
    await text(index, 'd1', 'd1word1');
    await snapshotted('d1');
    await text(index, 'd2', 'd2word1');
    const reopening = text(index, 'd1', 'd1word2');
    await index.putItems([item('d1', 'during', 'duringopen')]);
    expect(await reopening).toEqual(['d1-i2']);
    expect(await text(index, 'd1', 'duringopen')).toEqual(['during']);
  });

  it('evicts as writes grow the open indexes past the bound', async () => {
    const { processOf } = world();
    const { index } = processOf(2 * DATASET_WEIGHT + 100);
    await text(index, 'd1', 'd1word1');
    await text(index, 'd2', 'd2word1');
    await index.putItems([item('d2', 'grow', 'growing')]);
    expect(loaded(index)).toEqual(['d2']);
    expect(await text(index, 'd1', 'd1word1')).toEqual(['d1-i1']);
  });

  it('a dataset over the bound on its own is opened, searched and kept alone until another one is opened', async () => {
    const { processOf } = world();
    const { index } = processOf(DATASET_WEIGHT / 2);
    expect(await text(index, 'd1', 'd1word4')).toEqual(['d1-i4']);
    expect(loaded(index)).toEqual(['d1']);
    expect(await text(index, 'd2', 'd2word4')).toEqual(['d2-i4']);
    expect(loaded(index)).toEqual(['d2']);
    expect(await text(index, 'd1', 'd1word5')).toEqual(['d1-i5']);
  });

  it('warm-up stops opening once the bound is reached instead of opening everything and evicting', async () => {
    const { source, processOf } = world();
    const { index } = processOf(2 * DATASET_WEIGHT - 100);
    const warmed: string[] = [];
    for (const id of DATASETS) {
      if (!(await index.warm(id, 'm'))) break;
      warmed.push(id);
    }
    expect(warmed).toEqual(['d1']); // opening d2 passed the bound (d1 went once): the warm-up stopped there
    expect(loaded(index)).toEqual(['d2']);
    expect(index.stats().evictions).toBe(1);
    expect([...source.streamed.keys()]).toEqual(['d1', 'd2']);
  });

  it('warm-up opens what fits, then stops without evicting when the bound is reached exactly', async () => {
    const { source, processOf } = world();
    const { index } = processOf(2 * DATASET_WEIGHT);
    const warmed: string[] = [];
    for (const id of DATASETS) {
      if (!(await index.warm(id, 'm'))) break;
      warmed.push(id);
    }
    expect(warmed).toEqual(['d1']); // d2's open reached the bound: the last one
    expect(loaded(index)).toEqual(['d1', 'd2']);
    expect(index.stats().evictions).toBe(0);
    expect(await index.warm('d3', 'm')).toBe(false); // nothing opened once the bound is reached
    expect([...source.streamed.keys()]).toEqual(['d1', 'd2']);
  });

  it('lowering the bound evicts at once', async () => {
    const { processOf } = world();
    const { index, logs } = processOf(10 * DATASET_WEIGHT);
    for (const id of ['d1', 'd2', 'd3']) await text(index, id, `${id}word1`);
    index.setMaxBytes(DATASET_WEIGHT);
    expect(loaded(index)).toEqual(['d3']);
    expect(logs.filter((line) => line.includes('evicted'))).toHaveLength(2);
  });
});
