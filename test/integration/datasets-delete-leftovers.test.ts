import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, client } from '../fixtures/datasets/client.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';

/**
 * Nothing a deleted dataset or collection owned is left behind: its search index (snapshot, meta,
 * change log) and the version stamps kept under its id (its search index's, each collection's
 * data list's), which nothing would ever read or remove again.
 */
let t: TestApp;
let api: Client;

beforeAll(async () => {
  t = await buildTestApp();
  await createUser(t, { username: 'leaver', password: 'password-l1' });
  api = client(t, await login(t, 'leaver', 'password-l1'));
});

afterAll(async () => {
  await t?.close();
});

const db = () => t.app.mongo.db;

/** A dataset with collections holding an item each, searched once (its index opened and logged to). */
async function usedDataset(name: string, collectionCount: number) {
  const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name }));
  const collectionIds: string[] = [];
  for (let i = 0; i < collectionCount; i++) {
    const collectionId = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: `c${i}`, type: 'virtual' }));
    await api.ok(api.post('/core/dataset/data/insertData', { collectionId, q: `item ${i} of ${name}` }));
    await api.ok(api.post('/core/dataset/data/list', { collectionId, pageNum: 1, pageSize: 10 }));
    collectionIds.push(collectionId);
  }
  await api.ok(api.post('/core/dataset/searchTest', { datasetId, text: 'item', searchMode: 'embedding' }));
  return { datasetId, collectionIds };
}

/** Stamps and stored index documents kept under the ids. */
async function leftOver(datasetId: string, collectionIds: string[]) {
  const keys = [`dataset:${datasetId}:search`, ...collectionIds.map((id) => `dataset-data:${id}`)];
  const stamps = await db()
    .collection<{ _id: string }>('version_stamps')
    .find({ _id: { $in: keys } })
    .toArray();
  return {
    stamps: stamps.map((stamp) => stamp._id),
    changes: await db().collection('dataset_index_changes').countDocuments({ datasetId }),
    segments: await db().collection('dataset_index_segments').countDocuments({ datasetId }),
    meta: await db().collection<{ _id: string }>('dataset_index_meta').countDocuments({ _id: datasetId }),
  };
}

describe('what deletes leave behind', () => {
  it('a dataset delete leaves neither its search index nor its stamps', async () => {
    const { datasetId, collectionIds } = await usedDataset('gone', 3);
    // The stamps the check looks for exist before the delete.
    expect((await leftOver(datasetId, collectionIds)).stamps).toHaveLength(4);
    await api.ok(api.call('DELETE', '/core/dataset/delete', undefined, { id: datasetId }));
    expect(await leftOver(datasetId, collectionIds)).toEqual({ stamps: [], changes: 0, segments: 0, meta: 0 });
  });

  it('a collection delete leaves no data list stamp, and the dataset’s other collections keep theirs', async () => {
    const { datasetId, collectionIds } = await usedDataset('kept', 2);
    const [gone, kept] = collectionIds as [string, string];
    await api.ok(api.post('/core/dataset/collection/delete', { id: gone }));
    expect((await leftOver(datasetId, [gone])).stamps).toEqual([`dataset:${datasetId}:search`]);
    expect((await leftOver(datasetId, [kept])).stamps).toContain(`dataset-data:${kept}`);
    // The kept collection's list still shows its item.
    expect((await api.ok<{ data: unknown[] }>(api.post('/core/dataset/data/list', { collectionId: kept, pageNum: 1, pageSize: 10 }))).data).toHaveLength(1);
  });
});
