import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upgradeIndexWriteLocks } from '../../src/platform/datasets/search/index-write-lock.repo.js';
import { repairAbandonedIndexWrites } from '../../src/platform/datasets/search/index-writes.js';
import { type Client, client } from '../fixtures/datasets/client.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';

/** The index write lock as named locks with a payload: what a dead writer of the previous version left is still repaired. */
let t: TestApp;
let api: Client;
let teamId: string;

beforeAll(async () => {
  t = await buildTestApp();
  teamId = (await createUser(t, { username: 'upgrader', password: 'password-u1' })).teamId;
  api = client(t, await login(t, 'upgrader', 'password-u1'));
});

afterAll(async () => {
  await t?.close();
});

const found = async (datasetId: string, text: string) =>
  (await api.ok<{ list: { q: string }[] }>(api.post('/core/dataset/searchTest', { datasetId, text, searchMode: 'fullTextRecall' }))).list.map((item) => item.q);

describe('index write locks', () => {
  it('a lock a process of the previous version died holding (until, intent) is repaired after the upgrade', async () => {
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Upgraded' }));
    const collectionId = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'c', type: 'virtual' }));
    const q = 'Deleted by a writer of the previous version: the quarry blasting rota.';
    const dataId = await api.ok<string>(api.post('/core/dataset/data/insertData', { collectionId, q }));
    expect(await found(datasetId, 'quarry blasting rota')).toEqual([q]);

    // That writer deleted the item and died before logging it, leaving its lock in its own format.
    const db = t.app.mongo.db;
    const item = await db.collection('dataset_datas').findOneAndDelete({ _id: new ObjectId(dataId) });
    const vectors = ((item?.indexes ?? []) as { dataId: string }[]).map((index) => index.dataId);
    expect(vectors).toHaveLength(1);
    await db.collection('dataset_index_writes').insertOne({ _id: datasetId as never, holder: 'a process of the previous version', until: new Date(Date.now() - 1000), intent: { teamId, items: [dataId], vectors } });
    expect(await found(datasetId, 'quarry blasting rota')).toEqual([q]);

    await upgradeIndexWriteLocks(db);
    expect(await repairAbandonedIndexWrites(t.app.datasets.ctx)).toBe(1);
    expect(await found(datasetId, 'quarry blasting rota')).toEqual([]);
    expect(await db.collection('dataset_vectors').countDocuments({ _id: { $in: vectors } as never })).toBe(0);
    expect(await db.collection('dataset_index_writes').countDocuments({})).toBe(0);
  });
});
