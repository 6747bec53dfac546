import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ObjectId } from 'mongodb';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Client, client } from '../fixtures/datasets/client.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { type FakeModelProvider, openAiEmbeddingAnswer, startFakeModelProvider } from '../helpers/fake-model-provider.js';
import { createUser, login } from '../helpers/platform.js';

/**
 * Writes that were authorised before a dataset or collection delete and land after its cascade
 * (data/insertData, the training worker) leave nothing behind. The interleaving is forced by
 * holding the embedding call (the provider answers when the test says so) and, for the
 * collection cascade's last step, by holding the collection repository's delete.
 */

interface Gate {
  reached: Promise<void>;
  release: () => void;
}

function gate(): Gate & { arrive: () => Promise<void> } {
  let reach!: () => void;
  let release!: () => void;
  const reached = new Promise<void>((resolve) => {
    reach = resolve;
  });
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  return {
    reached,
    release,
    arrive: () => {
      reach();
      return released;
    },
  };
}

let provider: FakeModelProvider;
let t: TestApp;
let api: Client;
/** Held embedding calls wait here until the test releases them. */
let embedGate: ReturnType<typeof gate> | undefined;

beforeAll(async () => {
  provider = await startFakeModelProvider(async (request) => {
    if (!request.path.endsWith('/embeddings')) return { status: 404, json: {} };
    const held = embedGate;
    if (held) {
      embedGate = undefined;
      await held.arrive();
    }
    return openAiEmbeddingAnswer((request.body as { input: string[] }).input);
  });
  const dir = await mkdtemp(join(tmpdir(), 'crash-writes-'));
  const configPath = join(dir, 'config.json');
  await writeFile(
    configPath,
    JSON.stringify({ vectorModels: [{ model: 'fake-embed', name: 'Fake embed', provider: 'openai', defaultToken: 512, maxToken: 3000, weight: 100, requestUrl: provider.baseUrl }] }),
  );
  t = await buildTestApp({ MODEL_CONFIG_PATH: configPath });
  await createUser(t, { username: 'racer', password: 'password-r1' });
  api = client(t, await login(t, 'racer', 'password-r1'));
});

afterEach(() => {
  embedGate?.release();
  embedGate = undefined;
});

afterAll(async () => {
  await t?.close();
  await provider?.close();
});

const hold = () => {
  embedGate = gate();
  return embedGate;
};
const db = () => t.app.mongo.db;
const stored = async (field: 'datasetId' | 'collectionId', id: string) => ({
  data: await db().collection('dataset_datas').countDocuments({ [field]: new ObjectId(id) }),
  vectors: await db().collection('dataset_vectors').countDocuments({ [field]: new ObjectId(id) }),
});

async function newCollection(datasetId?: string): Promise<{ datasetId: string; collectionId: string }> {
  const id = datasetId ?? (await api.ok<string>(api.post('/core/dataset/create', { name: `Raced ${Math.random()}`, vectorModel: 'fake-embed' })));
  const collectionId = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId: id, name: `manual ${Math.random()}`, type: 'virtual' }));
  return { datasetId: id, collectionId };
}

describe('data/insertData authorised before a delete', () => {
  it('leaves no data or vectors in a dataset deleted while it embedded, and says so', async () => {
    const { datasetId, collectionId } = await newCollection();
    const held = hold();
    const inserting = api.post('/core/dataset/data/insertData', { collectionId, q: 'written after the delete', a: 'answer' });
    await held.reached;
    await api.ok(api.del('/core/dataset/delete', { id: datasetId }));
    expect(await stored('datasetId', datasetId)).toEqual({ data: 0, vectors: 0 });
    held.release();

    const answer = await inserting;
    expect(answer.status).toBe(404);
    expect(answer.body).toMatchObject({ statusText: 'unExistDataset' });
    expect(await stored('datasetId', datasetId)).toEqual({ data: 0, vectors: 0 });
    // An insert answering an error is not billed (its embedding was made, nothing was kept).
    await t.app.identity.usage.drain();
    expect(await db().collection('usages').countDocuments({ appName: 'Data index' })).toBe(0);
  });

  it('leaves no data or vectors in a collection deleted while it embedded', async () => {
    const { datasetId, collectionId } = await newCollection();
    const { collectionId: kept } = await newCollection(datasetId);
    await api.ok(api.post('/core/dataset/data/insertData', { collectionId: kept, q: 'kept item' }));
    const held = hold();
    const inserting = api.post('/core/dataset/data/insertData', { collectionId, q: 'written after the delete' });
    await held.reached;
    await api.ok(api.del('/core/dataset/collection/delete', { id: collectionId }));
    held.release();

    const answer = await inserting;
    expect(answer.status).toBe(404);
    expect(answer.body).toMatchObject({ statusText: 'unAuthDatasetCollection' });
    expect(await stored('collectionId', collectionId)).toEqual({ data: 0, vectors: 0 });
    expect(await stored('collectionId', kept)).toEqual({ data: 1, vectors: 1 });
  });
});

describe('the training worker and a collection deleted mid-batch', () => {
  const worker = () => t.app.datasets.trainingWorker;

  it('removes what it wrote into a collection deleted after it planned the batch', async () => {
    const { datasetId, collectionId } = await newCollection();
    const { collectionId: kept } = await newCollection(datasetId);
    await api.ok(api.post('/core/dataset/data/pushData', { collectionId, data: [{ q: 'doomed one' }, { q: 'doomed two' }] }));
    await api.ok(api.post('/core/dataset/data/pushData', { collectionId: kept, data: [{ q: 'survivor' }] }));
    const held = hold();
    const running = worker().runOnce();
    await held.reached;
    await api.ok(api.del('/core/dataset/collection/delete', { id: collectionId }));
    held.release();
    expect(await running).toBe(3);

    expect(await stored('collectionId', collectionId)).toEqual({ data: 0, vectors: 0 });
    expect(await stored('collectionId', kept)).toEqual({ data: 1, vectors: 1 });
    expect(await db().collection('dataset_trainings').countDocuments({ datasetId: new ObjectId(datasetId) })).toBe(0);
  });

  it('leaves nothing when its write lands between the collection cascade and the collection document going', async () => {
    const { collectionId } = await newCollection();
    await api.ok(api.post('/core/dataset/data/pushData', { collectionId, data: [{ q: 'lands in the gap' }] }));
    const held = hold();
    const running = worker().runOnce();
    await held.reached;

    // The delete runs its first pass, then waits before removing the collection document.
    const collections = t.app.datasets.ctx.repos.collections;
    const original = collections.deleteMany;
    const documentGate = gate();
    collections.deleteMany = async (...args) => {
      await documentGate.arrive();
      return original(...args);
    };
    try {
      const deleting = api.del('/core/dataset/collection/delete', { id: collectionId });
      await documentGate.reached;
      held.release();
      expect(await running).toBe(1);
      // The worker saw the collection still there: its write stands until the cascade's last pass.
      expect(await stored('collectionId', collectionId)).toEqual({ data: 1, vectors: 1 });
      documentGate.release();
      expect((await deleting).status).toBe(200);
    } finally {
      collections.deleteMany = original;
    }
    expect(await stored('collectionId', collectionId)).toEqual({ data: 0, vectors: 0 });
  });
});
