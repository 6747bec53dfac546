import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, client } from '../fixtures/datasets/client.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { type FakeModelProvider, openAiEmbeddingAnswer, startFakeModelProvider } from '../helpers/fake-model-provider.js';
import { createUser, login } from '../helpers/platform.js';

/** data/insertData refuses an item identical (q and a) to one of its collection with 409, however many arrive at once. */
let provider: FakeModelProvider;
let t: TestApp;
let api: Client;
/** Embedding calls wait until this many have arrived (every request is past its checks made before embedding). */
let together = 0;
let arrived = 0;
let allArrived: () => void = () => undefined;
let everyoneHere = Promise.resolve();

beforeAll(async () => {
  provider = await startFakeModelProvider(async (request) => {
    const input = (request.body as { input: string[] }).input;
    arrived += 1;
    if (arrived >= together) allArrived();
    await everyoneHere;
    return openAiEmbeddingAnswer(input);
  });
  const dir = await mkdtemp(join(tmpdir(), 'insert-duplicates-'));
  const models = join(dir, 'config.json');
  await writeFile(models, JSON.stringify({ vectorModels: [{ model: 'fake-embed', name: 'Fake embed', provider: 'openai', defaultToken: 512, maxToken: 3000, weight: 100, requestUrl: provider.baseUrl }] }));
  t = await buildTestApp({ MODEL_CONFIG_PATH: models });
  await createUser(t, { username: 'duplicator', password: 'password-d1' });
  api = client(t, await login(t, 'duplicator', 'password-d1'));
});

afterAll(async () => {
  await t?.close();
  await provider?.close();
});

describe('identical insertData calls at once', () => {
  it('store one item; the others get 409 and leave no vector behind', async () => {
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Duplicates', vectorModel: 'fake-embed' }));
    const collectionId = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'c', type: 'virtual' }));
    const calls = 6;
    together = calls;
    arrived = 0;
    everyoneHere = new Promise<void>((resolve) => (allArrived = resolve));
    const results = await Promise.all(Array.from({ length: calls }, () => api.post('/core/dataset/data/insertData', { collectionId, q: 'the same question', a: 'the same answer' })));
    const statuses = results.map((result) => result.status).sort();
    const stored = await t.app.mongo.db.collection('dataset_datas').countDocuments({ collectionId: new ObjectId(collectionId) });
    const vectors = await t.app.mongo.db.collection('dataset_vectors').countDocuments({ collectionId: new ObjectId(collectionId) });
    // q+a and q alone: two vectors for the one item.
    expect({ statuses, stored, vectors }).toEqual({ statuses: [200, 409, 409, 409, 409, 409], stored: 1, vectors: 2 });
    expect(results.find((result) => result.status === 409)?.body.message).toMatch(/identical data item/);
  });
});
