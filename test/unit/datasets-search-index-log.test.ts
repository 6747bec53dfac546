import { describe, expect, it } from 'vitest';
import type { VersionStamps } from '../../src/infra/version-stamps.js';
import type { CollectionRepo } from '../../src/platform/datasets/collections/collection.repo.js';
import { collectionStampKey } from '../../src/platform/datasets/collections/collection-cache.js';
import type { DataRepo } from '../../src/platform/datasets/data/data.repo.js';
import { forbiddenCollections, type IndexedItem } from '../../src/platform/datasets/search/dataset-entry.js';
import { CATCH_UP_MAX_AGE_MS, createDatasetIndex } from '../../src/platform/datasets/search/dataset-index.js';
import type { IndexStore } from '../../src/platform/datasets/search/index-store.repo.js';
import type { VectorRepo, VectorRow } from '../../src/platform/datasets/search/vector.repo.js';
import { memoryStamps, memoryStore } from '../helpers/search-index-memory.js';

const item = (id: string, q: string, collectionId = 'c1'): IndexedItem => ({ _id: id, datasetId: 'd1', collectionId, q, a: '', chunkIndex: 0 });
const vector = (id: string, dataId: string, values: number[]): VectorRow => ({ id, teamId: 't1', datasetId: 'd1', collectionId: 'c1', dataId, model: 'm', vector: values });

/** Source repositories (the data items); `gate` holds the item stream halfway, like a slow load. */
function sources(stored: { items: IndexedItem[]; vectors: VectorRow[] }, gate?: Promise<void>) {
  const streamed = { items: 0 };
  let started!: () => void;
  const loading = new Promise<void>((resolve) => {
    started = resolve;
  });
  const data = {
    async *streamDataset() {
      streamed.items += 1;
      started();
      await gate;
      yield* stored.items.map((entry) => ({ ...entry, fullTextTokens: undefined }));
    },
  } as unknown as DataRepo;
  const vectors = {
    async *streamDataset() {
      yield* stored.vectors;
    },
  } as unknown as VectorRepo;
  const collections = { byDatasets: async () => [] } as unknown as CollectionRepo;
  const datasets = { existingIds: async (ids: string[]) => new Set(ids.filter((id) => !deletedDatasets.has(id))) };
  return { data, vectors, collections, datasets, streamed, loading };
}

/** Datasets deleted (their documents gone), as every process's dataset repository answers. */
const deletedDatasets = new Set<string>();

function process(shared: { store: IndexStore; stamps: VersionStamps }, source = sources({ items: [], vectors: [] }), options = {}) {
  return createDatasetIndex({ ...source, ...shared, bumps: shared.stamps, log: { info: () => undefined, warn: () => undefined } }, { minRows: 1_000_000, maxChanges: 1_000_000, ...options });
}

const ids = (hits: { item: IndexedItem }[]) => hits.map((hit) => hit.item._id);
const text = (index: ReturnType<typeof process>, token: string, model = 'm') => index.fullTextSearch(['d1'], model, [token], 10, new Set()).then(ids);

describe('dataset search index: change log, snapshots, several processes', () => {
  it('keeps writes made while the dataset opens from its data items', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const source = sources({ items: [item('old', 'alpha')], vectors: [vector('v-old', 'old', [1, 0])] }, gate);
    const index = process({ store: memoryStore().store, stamps: memoryStamps() }, source);
    const warming = index.warm('d1', 'm');
    await source.loading;
    await index.putItems([item('new', 'beta')]);
    await index.addVectors([vector('v-new', 'new', [0, 1])]);
    await index.removeItems('d1', ['old']);
    release();
    await warming;
    expect(await text(index, 'beta')).toEqual(['new']);
    expect(await text(index, 'alpha')).toEqual([]);
    expect(ids(await index.vectorSearch(['d1'], 'm', [0, 1], 5, new Set()))).toEqual(['new']);
  });

  it('a write through one process is searchable in another once the stamp moved', async () => {
    const shared = { store: memoryStore().store, stamps: memoryStamps() };
    const writer = process(shared);
    const reader = process(shared);
    await reader.warm('d1', 'm');
    await writer.putItems([item('x1', 'gamma')]);
    await writer.addVectors([vector('vx1', 'x1', [1, 1])]);
    expect(await text(reader, 'gamma')).toEqual(['x1']);
    await writer.removeCollections([{ _id: 'c1', datasetId: 'd1' }]);
    expect(await text(reader, 'gamma')).toEqual([]);
    expect(await reader.vectorSearch(['d1'], 'm', [1, 1], 5, new Set())).toEqual([]);
  });

  it('numbers concurrent appends of two processes without gaps or repeats', async () => {
    const memory = memoryStore();
    const shared = { store: memory.store, stamps: memoryStamps() };
    const [a, b, reader] = [process(shared), process(shared), process(shared)];
    await reader.warm('d1', 'm');
    await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).putItems([item(`p${i}`, 'delta')])));
    expect([...memory.changes.values()].map((c) => c.seq).sort((x, y) => x - y)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(await text(reader, 'delta')).toHaveLength(10);
  });

  it('a log that keeps changing under every attempt is a 503 to try again, not an unexpected error', async () => {
    const memory = memoryStore();
    // Another process's appends always take the number this one tries, and a gap always shows after the snapshot.
    const busy: IndexStore = { ...memory.store, tryAppend: async () => false, changesAfter: async () => [{ seq: 7, changes: [] }] };
    const index = process({ store: busy, stamps: memoryStamps() });
    await expect(index.warm('d1', 'm')).rejects.toMatchObject({ httpStatus: 503, message: expect.stringContaining('kept changing') });
    const writer = process({ store: { ...memory.store, tryAppend: async () => false }, stamps: memoryStamps() });
    await writer.warm('d1', 'm');
    await expect(writer.putItems([item('x1', 'alpha')])).rejects.toMatchObject({ httpStatus: 503 });
  });

  it('a new process opens the snapshot plus the changes after it, without reading the data items', async () => {
    const memory = memoryStore();
    const shared = { store: memory.store, stamps: memoryStamps() };
    const first = process(shared, sources({ items: [item('s1', 'epsilon')], vectors: [vector('vs1', 's1', [1, 0])] }));
    await first.warm('d1', 'm'); // opened from the data items: a snapshot is written at once
    await first.close();
    const writer = process(shared);
    await writer.putItems([item('s2', 'epsilon zeta')]);
    const source = sources({ items: [], vectors: [] });
    const restarted = process(shared, source);
    expect((await text(restarted, 'epsilon')).sort()).toEqual(['s1', 's2']);
    expect(ids(await restarted.vectorSearch(['d1'], 'm', [1, 0], 5, new Set()))).toEqual(['s1']);
    expect(source.streamed.items).toBe(0);
    expect(memory.reads.parts).toBe(1);
  });

  it('a process behind folded changes opens the newer snapshot and misses nothing', async () => {
    const memory = memoryStore();
    const shared = { store: memory.store, stamps: memoryStamps() };
    const behind = process(shared);
    await behind.warm('d1', 'm');
    await behind.close(); // its first snapshot (empty) is written
    const busy = process(shared, undefined, { minRows: 1, ratio: 0 });
    await busy.warm('d1', 'm');
    for (let i = 0; i < 5; i++) await busy.putItems([item(`b${i}`, 'eta')]);
    await busy.close(); // snapshots written along the way fold the changes
    expect([...memory.changes.values()].some((c) => c.changes === undefined)).toBe(true);
    expect(memory.segments.size).toBe(1); // replaced snapshots are deleted
    const partsRead = memory.reads.parts;
    expect((await text(behind, 'eta')).sort()).toEqual(['b0', 'b1', 'b2', 'b3', 'b4']);
    expect(memory.reads.parts).toBe(partsRead + 1);
  });

  it('a dataset deleted through one process is freed by the sweep of the others', async () => {
    const memory = memoryStore();
    const shared = { store: memory.store, stamps: memoryStamps() };
    const deleting = process(shared);
    const other = process(shared);
    await deleting.putItems([item('g1', 'kappa')]);
    await other.warm('d1', 'm');
    expect(other.isLoaded('d1')).toBe(true);
    deletedDatasets.add('d1');
    try {
      await deleting.dropDataset('d1');
      expect(other.isLoaded('d1')).toBe(true);
      expect(await other.evictDeleted()).toBe(1);
      expect(other.isLoaded('d1')).toBe(false);
      expect([...memory.changes.values(), ...memory.segments.values()]).toEqual([]);
    } finally {
      deletedDatasets.delete('d1');
    }
  });

  it('a writer killed between its log append and its stamp bump: the others replay the log within the catch-up age', async () => {
    const memory = memoryStore();
    const stamps = memoryStamps();
    let clock = 1_000_000;
    const collections = [{ _id: 'c1', name: 'c', forbid: false }];
    const source = { ...sources({ items: [], vectors: [] }), collections: { byDatasets: async () => collections.map((c) => ({ ...c })) } as unknown as CollectionRepo };
    const reader = process({ store: memory.store, stamps }, source, { now: () => clock });
    const forbidden = async () => [...forbiddenCollections(await reader.prepare('t1', ['d1'], 'm'))];
    expect(await forbidden()).toEqual([]);
    const killed = { ...stamps, bump: async () => Promise.reject(new Error('killed')) };
    const dying = createDatasetIndex({ ...sources({ items: [], vectors: [] }), store: memory.store, stamps, bumps: killed, log: { info: () => undefined, warn: () => undefined } });
    await expect(dying.putItems([item('k1', 'lambda')])).rejects.toThrow('killed');
    // A forbid whose process died before logging it (after the repository's bump of the team's collection stamp).
    collections[0]!.forbid = true;
    await stamps.bump(collectionStampKey('t1'));
    expect(await text(reader, 'lambda')).toEqual([]);
    expect(await forbidden()).toEqual([]);
    clock += CATCH_UP_MAX_AGE_MS;
    expect(await text(reader, 'lambda')).toEqual(['k1']);
    expect(await forbidden()).toEqual(['c1']);
  });

  it('a model switch empties the vectors until vectors of the new model arrive', async () => {
    const shared = { store: memoryStore().store, stamps: memoryStamps() };
    const writer = process(shared);
    const reader = process(shared);
    await reader.warm('d1', 'm');
    await writer.putItems([item('m1', 'theta')]);
    await writer.addVectors([vector('vm1', 'm1', [1, 0])]);
    expect(ids(await reader.vectorSearch(['d1'], 'm', [1, 0], 5, new Set()))).toEqual(['m1']);
    await writer.switchModel('d1', 'm2');
    expect(await reader.vectorSearch(['d1'], 'm2', [1, 0], 5, new Set())).toEqual([]);
    await writer.addVectors([{ ...vector('vm2', 'm1', [0, 1]), model: 'm2' }]);
    expect(ids(await reader.vectorSearch(['d1'], 'm2', [0, 1], 5, new Set()))).toEqual(['m1']);
    expect(await text(reader, 'theta', 'm2')).toEqual(['m1']);
  });
});
