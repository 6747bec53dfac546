import { describe, expect, it } from 'vitest';
import type { VersionStamps } from '../../src/infra/version-stamps.js';
import { collectionStampKey } from '../../src/platform/datasets/collections/collection-cache.js';
import type { CollectionRepo } from '../../src/platform/datasets/collections/collection.repo.js';
import type { DataRepo } from '../../src/platform/datasets/data/data.repo.js';
import { COLLECTIONS_CHECK_MS, COLLECTIONS_MAX_AGE_MS } from '../../src/platform/datasets/search/collection-lists.js';
import { DatasetEntry, forbiddenCollections, type IndexedItem } from '../../src/platform/datasets/search/dataset-entry.js';
import { captureSnapshot, encodeSnapshot } from '../../src/platform/datasets/search/index-codec.js';
import { CATCH_UP_MAX_AGE_MS, createDatasetIndex, searchStampKey } from '../../src/platform/datasets/search/dataset-index.js';
import { FOLDED_KEEP_MS } from '../../src/platform/datasets/search/index-compaction.js';
import type { IndexStore } from '../../src/platform/datasets/search/index-store.repo.js';
import type { VectorRepo } from '../../src/platform/datasets/search/vector.repo.js';
import { memoryStamps, memoryStore } from '../helpers/search-index-memory.js';

/**
 * What a warm search reads: the search index's stamp (or, once a minute, the log without it), the
 * collections only when a change, the team's collection stamp or their age says so, and the
 * index's meta only when the log may have lost changes since the entry last read it.
 */

const item = (id: string, q: string, collectionId = 'c1'): IndexedItem => ({ _id: id, datasetId: 'd1', collectionId, q, a: '', chunkIndex: 0 });

interface Row {
  _id: string;
  teamId: string;
  name: string;
  forbid: boolean;
}

/** Storage shared by "processes", and one clock. */
function sharedWorld() {
  const rows: Row[] = [
    { _id: 'c1', teamId: 't1', name: 'one', forbid: false },
    { _id: 'c2', teamId: 't1', name: 'two', forbid: false },
  ];
  const clock = { at: 1_000_000 };
  return { memory: memoryStore(), stamps: memoryStamps(), rows, clock };
}

/** A process over shared storage, counting what it reads: stamps by key, collection lists by team, the log, the meta. */
function world(shared = sharedWorld(), options: { minRows?: number; ratio?: number } = {}) {
  const { memory, stamps, rows, clock } = shared;
  const reads = { stamps: [] as string[], lists: [] as string[], meta: 0, changes: 0 };
  const counted: VersionStamps = {
    ...stamps,
    read: (key) => {
      reads.stamps.push(key);
      return stamps.read(key);
    },
  };
  const store: IndexStore = {
    ...memory.store,
    meta: (datasetId) => {
      reads.meta += 1;
      return memory.store.meta(datasetId);
    },
    changesAfter: (datasetId, seq) => {
      reads.changes += 1;
      return memory.store.changesAfter(datasetId, seq);
    },
  };
  const collections = {
    byDatasets: async (teamId: string) => {
      reads.lists.push(teamId);
      return rows.filter((row) => row.teamId === teamId).map((row) => ({ ...row }));
    },
  } as unknown as CollectionRepo;
  const empty = {
    async *streamDataset() {
      yield* [];
    },
  };
  const index = createDatasetIndex(
    {
      data: empty as unknown as DataRepo,
      vectors: empty as unknown as VectorRepo,
      collections,
      datasets: { existingIds: async (ids: string[]) => new Set(ids) },
      store,
      stamps: counted,
      bumps: stamps,
      log: { info: () => undefined, warn: () => undefined },
    },
    { minRows: 1_000_000, maxChanges: 1_000_000, ...options, now: () => clock.at },
  );
  return {
    shared,
    index,
    rows,
    reads,
    stamps,
    store: memory.store,
    clear: () => {
      reads.stamps.length = 0;
      reads.lists.length = 0;
      reads.meta = 0;
      reads.changes = 0;
    },
    advance: (ms: number) => {
      clock.at += ms;
    },
    forbidden: async (teamId = 't1') => [...forbiddenCollections(await index.prepare(teamId, ['d1'], 'm'))],
    names: async (teamId = 't1') => [...(await index.prepare(teamId, ['d1'], 'm'))[0]!.collections.values()].map((c) => c.name).sort(),
    text: async (token: string) => (await index.fullTextSearch(['d1'], 'm', [token], 10, new Set())).map((hit) => hit.item._id),
  };
}

describe('collections kept for searches', () => {
  it('are kept for the team that read them; another team never gets them', async () => {
    const w = world();
    w.rows.push({ _id: 'x1', teamId: 't2', name: 'theirs', forbid: true });
    expect(await w.names('t1')).toEqual(['one', 'two']);
    w.clear();
    expect(await w.names('t1')).toEqual(['one', 'two']);
    expect(w.reads.lists).toEqual([]);
    expect(await w.names('t2')).toEqual(['theirs']);
    expect(w.reads.lists).toEqual(['t2']);
    expect(await w.forbidden('t1')).toEqual([]);
    expect(w.reads.lists).toEqual(['t2', 't1']);
  });

  it('are compared with the team collection stamp once a minute, and read again when it moved', async () => {
    const w = world();
    expect(await w.forbidden()).toEqual([]);
    // A forbid whose process died before logging it: the repository bumped the stamp after its write.
    w.rows[0]!.forbid = true;
    await w.stamps.bump(collectionStampKey('t1'));
    w.clear();
    w.advance(COLLECTIONS_CHECK_MS - 1);
    expect(await w.forbidden()).toEqual([]);
    expect(w.reads.stamps).not.toContain(collectionStampKey('t1'));
    w.advance(1);
    expect(await w.forbidden()).toEqual(['c1']);
    expect(w.reads.lists).toEqual(['t1']);
  });

  it('an unchanged stamp keeps them (no list read) until their age runs out', async () => {
    const w = world();
    expect(await w.forbidden()).toEqual([]);
    // A forbid whose process died before even its stamp bump.
    w.rows[1]!.forbid = true;
    w.clear();
    let age = 0;
    while (age + COLLECTIONS_CHECK_MS < COLLECTIONS_MAX_AGE_MS) {
      w.advance(COLLECTIONS_CHECK_MS);
      age += COLLECTIONS_CHECK_MS;
      expect(await w.forbidden(), `after ${age} ms`).toEqual([]);
    }
    expect(w.reads.lists).toEqual([]);
    expect(w.reads.stamps.filter((key) => key === collectionStampKey('t1')).length).toBeGreaterThan(0);
    w.advance(COLLECTIONS_MAX_AGE_MS - age);
    expect(await w.forbidden()).toEqual(['c2']);
    expect(w.reads.lists).toEqual(['t1']);
  });

  it('a logged collection change empties them at once', async () => {
    const w = world();
    expect(await w.names()).toEqual(['one', 'two']);
    w.rows[0]!.name = 'renamed';
    await w.index.collectionsChanged('d1');
    expect(await w.names()).toEqual(['renamed', 'two']);
  });
});

describe('the search index log, warm', () => {
  it('a catch-up by age reads the log but not the stamp, nor the meta after a recent catch-up', async () => {
    const w = world();
    await w.index.putItems([item('i1', 'alpha')]);
    await w.index.prepare('t1', ['d1'], 'm');
    w.clear();
    w.advance(CATCH_UP_MAX_AGE_MS);
    await w.index.prepare('t1', ['d1'], 'm');
    expect(w.reads).toMatchObject({ changes: 1, meta: 0, lists: [] });
    expect(w.reads.stamps).not.toContain(searchStampKey('d1'));
  });

  it("a stamp moved by this process's own write: the log is read, the meta is not", async () => {
    const w = world();
    await w.index.prepare('t1', ['d1'], 'm');
    await w.index.putItems([item('i2', 'beta')]);
    w.clear();
    await w.index.prepare('t1', ['d1'], 'm');
    expect(w.reads).toMatchObject({ changes: 1, meta: 0, lists: [] });
    expect(w.reads.stamps).toEqual([searchStampKey('d1')]);
  });

  it('an entry idle for half the time folded changes stay logged reads the meta, and opens the snapshot holding changes the log lost', async () => {
    const w = world();
    await w.index.prepare('t1', ['d1'], 'm');
    await w.index.putItems([item('i0', 'gamma')]);
    await w.index.close(); // its own snapshot writes settle
    expect(await w.text('gamma')).toEqual(['i0']);
    w.advance(FOLDED_KEEP_MS / 2);
    // Another process logged i1 as change 2, a snapshot holds it, and the log lost it (deleted an hour on).
    const later = new DatasetEntry('d1', 'm');
    for (const id of ['i0', 'i1']) later.putItem(item(id, 'gamma'));
    later.seq = 2;
    expect(await w.store.tryAppend('d1', 2, [], new Date(0))).toBe(true);
    const previous = (await w.store.claim('d1', 'm', new Date(w.shared.clock.at), new Date(w.shared.clock.at + 1)))!;
    const parts = await encodeSnapshot(captureSnapshot(later));
    await w.store.writeParts('d1', 'later', parts);
    expect(await w.store.publish('d1', previous, { snapshot: 'later', seq: 2, model: 'm', parts: parts.length }, new Date(0))).toBe(true);
    await w.store.foldChanges('d1', 2, new Date(w.shared.clock.at + FOLDED_KEEP_MS));
    expect(w.shared.memory.changes.size).toBe(0);
    await w.stamps.bump(searchStampKey('d1'));
    w.clear();
    expect((await w.text('gamma')).sort()).toEqual(['i0', 'i1']);
    expect(w.reads.meta).toBeGreaterThan(0);
  });
});
