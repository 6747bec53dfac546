import { describe, expect, it } from 'vitest';
import type { CollectionRepo } from '../../src/platform/datasets/collections/collection.repo.js';
import type { DataRepo } from '../../src/platform/datasets/data/data.repo.js';
import { DatasetEntry, type IndexedItem } from '../../src/platform/datasets/search/dataset-entry.js';
import { createDatasetIndex } from '../../src/platform/datasets/search/dataset-index.js';
import { ABANDONED_MS, createCompactor } from '../../src/platform/datasets/search/index-compaction.js';
import { openFromSnapshot } from '../../src/platform/datasets/search/index-open.js';
import type { IndexStore } from '../../src/platform/datasets/search/index-store.repo.js';
import type { VectorRepo } from '../../src/platform/datasets/search/vector.repo.js';
import { memoryStamps, memoryStore } from '../helpers/search-index-memory.js';

const item = (id: string, q: string): IndexedItem => ({ _id: id, datasetId: 'd1', collectionId: 'c1', q, a: '', chunkIndex: 0 });

/** An entry of `n` items at change `seq`, never snapshotted (so due for one). */
function entryAt(seq: number, n: number, prefix: string) {
  const entry = new DatasetEntry('d1', 'm');
  for (let i = 0; i < n; i++) entry.putItem(item(`${prefix}${i}`, `hello ${i}`));
  entry.seq = seq;
  entry.snapshotSeq = -1;
  entry.rowsSinceSnapshot = n;
  return entry;
}

function gate() {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

const log = { warn: () => undefined };
const clock = { at: 10 * ABANDONED_MS };
const compactor = (store: IndexStore) => createCompactor({ store, log }, { minRows: 1, now: () => clock.at }, () => true);

describe('search index snapshots written by two processes', () => {
  it("a writer's clean-up after its publish leaves the parts of the next snapshot another process wrote meanwhile", async () => {
    const memory = memoryStore();
    // P1 stops after its publish (claim released), in foldChanges, until P2 wrote and published S2.
    const atFold = gate();
    const resume = gate();
    const store1: IndexStore = {
      ...memory.store,
      foldChanges: async (...args) => {
        atFold.open();
        await resume.promise;
        return memory.store.foldChanges(...args);
      },
    };
    const p1 = compactor(store1);
    const p2 = compactor(memory.store);
    p1.maybeCompact(entryAt(10, 50, 'a'));
    await atFold.promise;
    const s1 = (await memory.store.meta('d1'))!.snapshot;
    p2.maybeCompact(entryAt(12, 60, 'b'));
    await p2.finished('d1');
    resume.open();
    await p1.finished('d1');

    const meta = (await memory.store.meta('d1'))!;
    expect(meta).toMatchObject({ seq: 12 });
    expect(meta.snapshot).not.toBe(s1);
    expect(await memory.store.partCount(meta.snapshot!)).toBe(meta.parts);
    expect([...memory.segments.keys()]).toEqual([meta.snapshot]); // S1, replaced by S2, is gone
    const opened = await openFromSnapshot(memory.store, 'd1');
    expect(opened).toBeInstanceOf(DatasetEntry);
    expect((opened as DatasetEntry).items.size).toBe(60);
  });

  it("a publish sweeps parts a crashed writer left a claim's length ago, and keeps those a writer may still be writing", async () => {
    const memory = memoryStore();
    const parts = [{ kind: 'x', data: new Uint8Array([1]) }] as never;
    await memory.store.writeParts('d1', 'crashed', parts, new Date(clock.at - ABANDONED_MS - 1));
    await memory.store.writeParts('d1', 'writing', parts, new Date(clock.at - 1000));
    const p1 = compactor(memory.store);
    p1.maybeCompact(entryAt(3, 5, 'a'));
    await p1.finished('d1');
    const meta = (await memory.store.meta('d1'))!;
    expect([...memory.segments.keys()].sort()).toEqual([meta.snapshot, 'writing'].sort());
  });

  it('a writer whose claim lapsed while it wrote publishes nothing and takes its parts back', async () => {
    const memory = memoryStore();
    const slow: IndexStore = {
      ...memory.store,
      writeParts: async (...args) => {
        await memory.store.writeParts(...args);
        clock.at += ABANDONED_MS / 2; // a claim's length passes
      },
    };
    const p1 = compactor(slow);
    p1.maybeCompact(entryAt(3, 5, 'a'));
    await p1.finished('d1');
    expect(await memory.store.meta('d1')).toMatchObject({ snapshot: null });
    expect(memory.segments.size).toBe(0);
    // The claim is released: the next writer publishes.
    const p2 = compactor(memory.store);
    p2.maybeCompact(entryAt(3, 5, 'a'));
    await p2.finished('d1');
    expect((await memory.store.meta('d1'))!.snapshot).not.toBeNull();
  });
});

describe('opening a dataset whose stored snapshot lacks parts', () => {
  function sources(items: IndexedItem[]) {
    const streamed = { items: 0 };
    const data = {
      async *streamDataset() {
        streamed.items += 1;
        yield* items.map((entry) => ({ ...entry, fullTextTokens: undefined }));
      },
    } as unknown as DataRepo;
    const vectors = { async *streamDataset() {} } as unknown as VectorRepo;
    const collections = { byDatasets: async () => [] } as unknown as CollectionRepo;
    const datasets = { existingIds: async (ids: string[]) => new Set(ids) };
    return { data, vectors, collections, datasets, streamed };
  }
  const warnings: string[] = [];
  const process = (shared: { store: IndexStore; stamps: ReturnType<typeof memoryStamps> }, source: ReturnType<typeof sources>) =>
    createDatasetIndex({ ...source, ...shared, bumps: shared.stamps, log: { info: () => undefined, warn: (message) => void warnings.push(message) } }, { minRows: 1_000_000, maxChanges: 1_000_000 });
  const text = (index: ReturnType<typeof process>, token: string) => index.fullTextSearch(['d1'], 'm', [token], 10, new Set()).then((hits) => hits.map((hit) => hit.item._id));

  it('rebuilds from the data items instead of failing for good, and stores a whole snapshot again', async () => {
    const memory = memoryStore();
    const shared = { store: memory.store, stamps: memoryStamps() };
    const items = [item('i1', 'lighthouse'), item('i2', 'keeper')];
    const first = process(shared, sources(items));
    await first.warm('d1', 'm'); // opened from the data items: a snapshot is written at once
    await first.close();
    const broken = (await memory.store.meta('d1'))!;
    expect(broken.parts).toBeGreaterThan(0);
    memory.segments.get(broken.snapshot!)!.parts.pop(); // a part deleted under it

    const source = sources(items);
    const restarted = process(shared, source);
    expect(await text(restarted, 'lighthouse')).toEqual(['i1']);
    expect(source.streamed.items).toBe(1);
    expect(warnings.some((message) => message.includes('lacks parts'))).toBe(true);
    await restarted.close();

    const repaired = (await memory.store.meta('d1'))!;
    expect(repaired.snapshot).not.toBe(broken.snapshot);
    expect(await memory.store.partCount(repaired.snapshot!)).toBe(repaired.parts);
    const next = sources([]);
    const another = process(shared, next);
    expect(await text(another, 'keeper')).toEqual(['i2']);
    expect(next.streamed.items).toBe(0); // the snapshot was whole again
  });
});
