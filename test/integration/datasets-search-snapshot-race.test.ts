import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DatasetEntry, type IndexedItem } from '../../src/platform/datasets/search/dataset-entry.js';
import { createCompactor } from '../../src/platform/datasets/search/index-compaction.js';
import { openFromSnapshot } from '../../src/platform/datasets/search/index-open.js';
import { createIndexStore, type IndexStore } from '../../src/platform/datasets/search/index-store.repo.js';
import { type Client, client } from '../fixtures/datasets/client.js';
import { buildReplica, buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';
import { until } from '../helpers/polling.js';

/**
 * Search index snapshots on the real repositories: two processes' snapshot writes interleaved
 * (held by gates, no sleeps) leave a snapshot that opens, and a snapshot missing parts is
 * rebuilt from the data items by the next process instead of failing every search.
 */
let t: TestApp;
let api: Client;

beforeAll(async () => {
  t = await buildTestApp();
  await createUser(t, { username: 'snap-race', password: 'password-sr1' });
  api = client(t, await login(t, 'snap-race', 'password-sr1'));
});
afterAll(async () => {
  await t?.close();
});

function gate() {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

describe('search index snapshots on the real repositories', () => {
  it("a writer's clean-up after its publish leaves the snapshot another process wrote and published meanwhile", async () => {
    const store = createIndexStore(t.app.mongo.db);
    const datasetId = 'aaaaaaaaaaaaaaaaaaaaaaaa';
    const entryAt = (seq: number, n: number) => {
      const entry = new DatasetEntry(datasetId, 'm');
      for (let i = 0; i < n; i++) entry.putItem({ _id: String(i).padStart(24, '0'), datasetId, collectionId: 'c', q: `hello ${i}`, a: '', chunkIndex: i } as IndexedItem);
      entry.seq = seq;
      entry.snapshotSeq = -1;
      entry.rowsSinceSnapshot = n;
      return entry;
    };
    // P1 is held after its publish (its claim released), in foldChanges, until P2 published.
    const atFold = gate();
    const resume = gate();
    const store1: IndexStore = {
      ...store,
      foldChanges: async (...args) => {
        atFold.open();
        await resume.promise;
        return store.foldChanges(...args);
      },
    };
    const log = { warn: () => undefined };
    const p1 = createCompactor({ store: store1, log }, { minRows: 1, now: Date.now }, () => true);
    const p2 = createCompactor({ store, log }, { minRows: 1, now: Date.now }, () => true);
    p1.maybeCompact(entryAt(10, 50));
    await atFold.promise;
    p2.maybeCompact(entryAt(12, 60));
    await p2.finished(datasetId);
    resume.open();
    await p1.finished(datasetId);

    const meta = (await store.meta(datasetId))!;
    expect(meta.seq).toBe(12);
    expect(await store.partCount(meta.snapshot!)).toBe(meta.parts);
    const opened = await openFromSnapshot(store, datasetId);
    expect(opened).toBeInstanceOf(DatasetEntry);
    expect((opened as DatasetEntry).items.size).toBe(60);
  });

  it('a process opening a dataset whose snapshot lacks a part rebuilds it from the data items and stores it whole again', async () => {
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'snapshots' }));
    const collectionId = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'c', type: 'virtual' }));
    await api.ok(api.post('/core/dataset/data/insertData', { collectionId, q: 'The lighthouse keeper.' }));
    const search = (on: Client) => on.ok<{ list: { q: string }[] }>(on.post('/core/dataset/searchTest', { datasetId, text: 'lighthouse', searchMode: 'fullTextRecall' }));
    expect((await search(api)).list.map((item) => item.q)).toEqual(['The lighthouse keeper.']);
    const store = createIndexStore(t.app.mongo.db);
    const whole = async () => {
      const meta = await store.meta(datasetId);
      return meta?.snapshot ? (await store.partCount(meta.snapshot)) === meta.parts : false;
    };
    await until(whole, 'the first snapshot');
    const broken = (await store.meta(datasetId))!;
    await t.app.mongo.db.collection('dataset_index_segments').deleteOne({ snapshot: broken.snapshot, part: 0 });

    const two = await buildReplica(t);
    try {
      const apiTwo = client(two, await login(two, 'snap-race', 'password-sr1'));
      expect((await search(apiTwo)).list.map((item) => item.q)).toEqual(['The lighthouse keeper.']);
      expect(two.logs()).toContain('lacks parts');
      await until(async () => (await store.meta(datasetId))?.snapshot !== broken.snapshot && (await whole()), 'the snapshot written again');
    } finally {
      await two.close();
    }
    const three = await buildReplica(t);
    try {
      const apiThree = client(three, await login(three, 'snap-race', 'password-sr1'));
      expect((await search(apiThree)).list.map((item) => item.q)).toEqual(['The lighthouse keeper.']);
      expect(three.logs()).toContain(`search index of dataset ${datasetId} opened from its stored snapshot`);
    } finally {
      await three.close();
    }
  });
});
