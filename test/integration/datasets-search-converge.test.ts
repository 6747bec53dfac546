import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repairAbandonedIndexWrites } from '../../src/platform/datasets/search/index-writes.js';
import { type Client, client } from '../fixtures/datasets/client.js';
import { buildReplica, buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';

/**
 * The search index of every process ends up saying what MongoDB holds, whichever process dies
 * between a data write and its log entry, and however a data update and a delete of one item
 * interleave. "Killed" here: the process loses its database connection right after the write
 * (nothing it does afterwards reaches MongoDB); another process then repairs what it left.
 */
let one: TestApp;
let two: TestApp;
let apiOne: Client;
let apiTwo: Client;
let datasetId: string;
let collectionId: string;
const USER = { username: 'converge', password: 'password-c1' };

beforeAll(async () => {
  one = await buildTestApp();
  two = await buildReplica(one);
  await createUser(one, USER);
  apiOne = client(one, await login(one, USER.username, USER.password));
  apiTwo = client(two, await login(two, USER.username, USER.password));
  datasetId = await apiOne.ok<string>(apiOne.post('/core/dataset/create', { name: 'Converging' }));
  collectionId = await apiOne.ok<string>(apiOne.post('/core/dataset/collection/create', { datasetId, name: 'c', type: 'virtual' }));
});

afterAll(async () => {
  await two?.close();
  await one?.close();
});

interface SearchList {
  list: { id: string; q: string }[];
}

const found = async (api: Client, text: string) =>
  (await api.ok<SearchList>(api.post('/core/dataset/searchTest', { datasetId, text, searchMode: 'fullTextRecall' }))).list.map((item) => item.q);

/** Searches through both processes until `done` holds for both (2 s at most), then returns what each found. */
async function settled(text: string, done: (qs: string[]) => boolean): Promise<string[][]> {
  const deadline = Date.now() + 2000;
  for (;;) {
    const results = [await found(apiOne, text), await found(apiTwo, text)];
    if (results.every(done) || Date.now() > deadline) return results;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * A third process of the deployment whose repository method (`data` or `vectors`) is the last
 * thing it does: once that write has landed, its database connection is gone.
 */
async function dyingAfter(repoName: 'data' | 'vectors', method: string): Promise<{ api: Client; close: () => Promise<void> }> {
  const dying = await buildReplica(one);
  const repo = dying.app.datasets.ctx.repos[repoName] as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  const write = repo[method]!;
  repo[method] = async (...args: unknown[]) => {
    const result = await write.apply(repo, args);
    await dying.app.mongo.client.close(true);
    return result;
  };
  const api = client(dying, await login(one, USER.username, USER.password));
  return { api, close: () => dying.app.close().catch(() => undefined) };
}

/** The sweep of a live process, as it runs once the dead process's lease has lapsed. */
const repairOnTwo = () => repairAbandonedIndexWrites(two.app.datasets.ctx, new Date(Date.now() + 60_000));

const has = (q: string) => (qs: string[]) => qs.includes(q);
const lacks = (q: string) => (qs: string[]) => !qs.includes(q);

describe('search index and MongoDB agree after a process dies mid-write', () => {
  it('a delete: the item, still searchable everywhere after the kill (a retry is a 404), leaves every index once repaired', async () => {
    const q = 'Deleted by a dying process: the tide tables of the northern harbour.';
    const dataId = await apiOne.ok<string>(apiOne.post('/core/dataset/data/insertData', { collectionId, q }));
    expect(await settled('tide tables harbour', has(q))).toEqual([[q], [q]]);
    const dying = await dyingAfter('data', 'deleteById');
    expect((await dying.api.post('/core/dataset/data/delete', { id: dataId })).status).toBeGreaterThanOrEqual(500);
    await dying.close();
    expect(await one.app.mongo.db.collection('dataset_datas').countDocuments({ _id: new ObjectId(dataId) })).toBe(0);
    expect(await found(apiTwo, 'tide tables harbour')).toEqual([q]);
    expect((await apiTwo.post('/core/dataset/data/delete', { id: dataId })).status).toBe(404);
    expect(await repairOnTwo()).toBe(1);
    expect(await settled('tide tables harbour', lacks(q))).toEqual([[], []]);
    // Its vectors, which the dead process never reached, went with it.
    expect(await one.app.mongo.db.collection('dataset_vectors').countDocuments({ dataId: new ObjectId(dataId) })).toBe(0);
  });

  it('an insert: the item becomes searchable everywhere', async () => {
    const q = 'Inserted by a dying process: the lighthouse lamp maintenance log.';
    const dying = await dyingAfter('data', 'insertNew');
    expect((await dying.api.post('/core/dataset/data/insertData', { collectionId, q })).status).toBeGreaterThanOrEqual(500);
    await dying.close();
    expect(await one.app.mongo.db.collection('dataset_datas').countDocuments({ q })).toBe(1);
    expect(await found(apiTwo, 'lighthouse lamp maintenance')).toEqual([]);
    expect(await repairOnTwo()).toBe(1);
    expect(await settled('lighthouse lamp maintenance', has(q))).toEqual([[q], [q]]);
  });

  it('an update: every index holds the new text', async () => {
    const q = 'Before the update: the ferry crossing schedule.';
    const updated = 'After the update: the glacier hiking permit rules.';
    const dataId = await apiOne.ok<string>(apiOne.post('/core/dataset/data/insertData', { collectionId, q }));
    expect(await settled('ferry crossing schedule', has(q))).toEqual([[q], [q]]);
    const dying = await dyingAfter('data', 'update');
    expect((await dying.api.post('/core/dataset/data/update', { dataId, q: updated })).status).toBeGreaterThanOrEqual(500);
    await dying.close();
    expect(await repairOnTwo()).toBe(1);
    expect(await settled('glacier hiking permit', has(updated))).toEqual([[updated], [updated]]);
    expect(await settled('ferry crossing schedule', lacks(q))).toEqual([[], []]);
    // The vectors the item no longer points to (its old text's) went too, which the dead process never reached.
    const db = one.app.mongo.db;
    const item = await db.collection('dataset_datas').findOne({ _id: new ObjectId(dataId) });
    const stored = await db.collection('dataset_vectors').find({ dataId: new ObjectId(dataId) }).toArray();
    const pointed = (item?.indexes ?? []) as { dataId: string }[];
    expect(stored.map((row) => row._id).sort()).toEqual(pointed.map((index) => index.dataId).sort());
  });

  it('a collection delete: the items it had started deleting leave every index (the collection stays, to delete again)', async () => {
    const doomed = await apiOne.ok<string>(apiOne.post('/core/dataset/collection/create', { datasetId, name: 'doomed', type: 'virtual' }));
    const q = 'In a collection being deleted: the reindeer herding calendar.';
    await apiOne.ok(apiOne.post('/core/dataset/data/insertData', { collectionId: doomed, q }));
    expect(await settled('reindeer herding calendar', has(q))).toEqual([[q], [q]]);
    const dying = await dyingAfter('vectors', 'deleteByCollections');
    expect((await dying.api.post('/core/dataset/collection/delete', { id: doomed })).status).toBeGreaterThanOrEqual(500);
    await dying.close();
    expect(await repairOnTwo()).toBe(1);
    expect(await settled('reindeer herding calendar', lacks(q))).toEqual([[], []]);
    expect(await one.app.mongo.db.collection('dataset_datas').countDocuments({ collectionId: new ObjectId(doomed) })).toBe(0);
    expect(await one.app.mongo.db.collection('dataset_collections').countDocuments({ _id: new ObjectId(doomed) })).toBe(1);
  });
});

describe('an update racing a delete of the same item', () => {
  it('does not bring the deleted item back into the index, and answers 404', async () => {
    const q = 'Raced item: the avalanche warning levels.';
    const dataId = await apiOne.ok<string>(apiOne.post('/core/dataset/data/insertData', { collectionId, q }));
    expect(await settled('avalanche warning levels', has(q))).toEqual([[q], [q]]);
    // The update has read the item when the other process deletes it (and logs the removal).
    const auth = one.app.datasets.ctx.auth;
    const authData = auth.authData;
    auth.authData = async (...args) => {
      const read = await authData(...args);
      await apiTwo.ok(apiTwo.post('/core/dataset/data/delete', { id: dataId }));
      return read;
    };
    let answer: number;
    try {
      answer = (await apiOne.post('/core/dataset/data/update', { dataId, q: 'Raced item, updated: the avalanche warning levels.' })).status;
    } finally {
      auth.authData = authData;
    }
    expect(answer).toBe(404);
    expect(await settled('avalanche warning levels', (qs) => qs.length === 0)).toEqual([[], []]);
    const db = one.app.mongo.db;
    expect(await db.collection('dataset_datas').countDocuments({ _id: new ObjectId(dataId) })).toBe(0);
    // The vectors the update embedded for it went again.
    expect(await db.collection('dataset_vectors').countDocuments({ dataId: new ObjectId(dataId) })).toBe(0);
  });
});
