import type { Db } from 'mongodb';
import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeModelProvider, openAiEmbeddingAnswer, startFakeModelProvider } from '../helpers/fake-model-provider.js';
import { openTestDatabase, type PlatformCaller, platformCaller, type RealServer, startRealServer, waitFor } from '../helpers/real-process.js';
import { writeFakeModelConfig } from './crash-helpers.js';

/**
 * `kill -9` during dataset deletes. Dataset A is caught between its two phases (the test holds
 * the lock its content removal waits for, so the kill lands there every time): already gone for
 * users, content still stored. Folder F (two datasets inside) is killed right after its delete
 * was recorded, wherever it then is. After a restart neither is listed nor readable, and once the
 * interrupted deletes are finished nothing of them is left; dataset C, not deleted, is intact.
 */
const CONTENT = ['dataset_collections', 'dataset_datas', 'dataset_vectors', 'dataset_trainings'] as const;

let provider: FakeModelProvider;
let database: Awaited<ReturnType<typeof openTestDatabase>>;
let server: RealServer | undefined;
let env: Record<string, string>;

beforeAll(async () => {
  provider = await startFakeModelProvider((request) =>
    request.path.endsWith('/embeddings') ? openAiEmbeddingAnswer((request.body as { input: string[] }).input) : { status: 404, json: {} },
  );
  // No worker: the queue items stay, so the delete has them to remove too.
  env = { MODEL_CONFIG_PATH: await writeFakeModelConfig(provider.baseUrl), TRAINING_WORKER: 'false' };
  database = await openTestDatabase();
});

afterAll(async () => {
  await server?.kill9();
  await database?.close();
  await provider?.close();
});

/** Stored content per collection name, for the given datasets. */
async function contentOf(db: Db, datasetIds: string[]): Promise<Record<string, number>> {
  const filter = { datasetId: { $in: datasetIds.map((id) => new ObjectId(id)) } };
  const counts: Record<string, number> = {};
  for (const name of CONTENT) counts[name] = await db.collection(name).countDocuments(filter);
  return counts;
}

/** A dataset with collections (queue items) and data items (vectors); returns its ids. */
async function fillDataset(api: PlatformCaller, datasetId: string, collections: number) {
  const collectionIds: string[] = [];
  for (let i = 0; i < collections; i++) {
    const text = Array.from({ length: 6 }, (_, n) => `Paragraph ${n} of collection ${i} about crash safety and deletes.`).join('\n\n');
    const created = await api.ok<{ collectionId: string }>('POST', '/core/dataset/collection/create/text', { datasetId, name: `c${i}`, text, trainingType: 'chunk', chunkSize: 100 });
    collectionIds.push(created.collectionId);
  }
  const dataIds: string[] = [];
  for (let i = 0; i < 5; i++) {
    dataIds.push(await api.ok<string>('POST', '/core/dataset/data/insertData', { collectionId: collectionIds[0], q: `stored question ${i}`, a: `stored answer ${i}` }));
  }
  return { collectionIds, dataIds };
}

const listedIds = async (api: PlatformCaller, parentId: string | null = null) =>
  (await api.ok<{ _id: string }[]>('POST', '/core/dataset/list', { parentId })).map((item) => item._id);

describe('kill -9 during dataset deletes', () => {
  it('leaves nothing a user can see half deleted, and a restart finishes the deletes', { timeout: 180_000 }, async () => {
    const { db } = database;
    server = await startRealServer(database.uri, env);
    let api = await platformCaller(server);
    const create = (name: string, parentId?: string) => api.ok<string>('POST', '/core/dataset/create', { name, vectorModel: 'fake-embed', ...(parentId ? { parentId } : {}) });
    const a = await create('A');
    const c = await create('C');
    await api.ok('POST', '/core/dataset/folder/create', { name: 'F' });
    const folder = (await api.ok<{ _id: string; name: string }[]>('POST', '/core/dataset/list', { parentId: null })).find((item) => item.name === 'F')!._id;
    const f1 = await create('F1', folder);
    const f2 = await create('F2', folder);
    const contentA = await fillDataset(api, a, 12);
    await fillDataset(api, c, 4);
    await fillDataset(api, f1, 12);
    await fillDataset(api, f2, 12);
    const before = { a: await contentOf(db, [a]), c: await contentOf(db, [c]), f: await contentOf(db, [f1, f2]) };
    for (const counts of Object.values(before)) expect(Math.min(...Object.values(counts))).toBeGreaterThan(0);

    // A: its content removal waits for this lock; the delete stops between its two phases.
    const locks = db.collection<{ _id: string; holder: string; expiresAt: Date }>('resource_tree_locks');
    await locks.insertOne({ _id: `dataset_collections:${a}`, holder: 'crash test', expiresAt: new Date(Date.now() + 10 * 60_000) });
    void api.call('DELETE', `/core/dataset/delete?id=${a}`).catch(() => undefined);
    await waitFor('dataset A to be hidden', async () => (await db.collection('datasets').countDocuments({ _id: new ObjectId(a) })) === 0, { intervalMs: 10 });
    // Gone for users although its content is still stored.
    expect(await contentOf(db, [a])).toEqual(before.a);
    expect(await listedIds(api)).not.toContain(a);
    expect((await api.call('GET', `/core/dataset/detail?id=${a}`)).status).toBe(404);
    expect((await api.call('GET', `/core/dataset/collection/detail?id=${contentA.collectionIds[1]}`)).status).toBe(404);
    expect((await api.call('GET', `/core/dataset/data/detail?id=${contentA.dataIds[0]}`)).status).toBe(404);
    expect((await api.call('POST', '/core/dataset/collection/list', { datasetId: a })).status).toBe(404);

    // F: killed as soon as its delete is recorded.
    void api.call('DELETE', `/core/dataset/delete?id=${folder}`).catch(() => undefined);
    const deletions = db.collection('dataset_deletions');
    await waitFor('the folder delete to be recorded', async () => (await deletions.countDocuments({ datasetIds: new ObjectId(folder) })) > 0, { intervalMs: 5 });
    await server.kill9();
    expect(await deletions.countDocuments({})).toBe(2);
    expect(await contentOf(db, [a])).toEqual(before.a);

    await locks.deleteOne({ _id: `dataset_collections:${a}`, holder: 'crash test' });
    // Locks the killed process held (the folder delete's tree lock, if the kill landed under it)
    // lapse 15 s after its last renewal, and the restart's finish waits for that: run their clocks out instead.
    await locks.updateMany({}, { $set: { expiresAt: new Date(0) } });
    server = await startRealServer(database.uri, env);
    api = await platformCaller(server);
    expect(await listedIds(api)).not.toContain(a);
    expect((await api.call('GET', `/core/dataset/detail?id=${a}`)).status).toBe(404);

    // Until the folder's delete is finished, it is either whole or gone. Content is read first:
    // if the folder is still listed after, its content cannot have started going before.
    await waitFor(
      'the interrupted deletes to finish',
      async () => {
        const content = await contentOf(db, [f1, f2]);
        if ((await listedIds(api)).includes(folder)) {
          expect(content).toEqual(before.f);
          const children = await api.call('POST', '/core/dataset/list', { parentId: folder });
          // 404: the folder went between the two lists; otherwise both datasets are there.
          if (children.status !== 404) expect((children.body.data as { _id: string }[]).map((item) => item._id).sort()).toEqual([f1, f2].sort());
        }
        return (await deletions.countDocuments({})) === 0;
      },
      { timeoutMs: 90_000, intervalMs: 200 },
    );

    const none = Object.fromEntries(CONTENT.map((name) => [name, 0]));
    expect(await contentOf(db, [a, f1, f2])).toEqual(none);
    expect(await db.collection('datasets').countDocuments({ _id: { $in: [a, folder, f1, f2].map((id) => new ObjectId(id)) } })).toBe(0);
    expect(await db.collection('resource_permissions').countDocuments({ resourceId: { $in: [a, folder, f1, f2].map((id) => new ObjectId(id)) } })).toBe(0);
    expect(await contentOf(db, [c])).toEqual(before.c);
    expect(await listedIds(api)).toEqual([c]);
    for (const id of [folder, f1, f2]) expect((await api.call('GET', `/core/dataset/detail?id=${id}`)).status).toBe(404);
  });
});
