import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Db, ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, client } from '../fixtures/datasets/client.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { type FakeModelProvider, openAiEmbeddingAnswer, startFakeModelProvider } from '../helpers/fake-model-provider.js';
import { createUser, login } from '../helpers/platform.js';

/**
 * A dataset's vector model switch (training/rebuildEmbedding) racing another switch or a write
 * that embeds: once training is done, every vector of the dataset is of the model the dataset
 * names (a vector of another model is never searched, and no rebuild flags its item again).
 */
let provider: FakeModelProvider;
let t: TestApp;
let api: Client;
/** Embedding requests holding `gate.text` wait for `gate.open` (after telling `gate.seen`). */
let gate: { text: string; seen: () => void; open: Promise<void> } | undefined;

beforeAll(async () => {
  provider = await startFakeModelProvider(async (request) => {
    const input = (request.body as { input: string[] }).input;
    const held = gate;
    if (held && input.some((text) => text.includes(held.text))) {
      held.seen();
      await held.open;
    }
    return openAiEmbeddingAnswer(input);
  });
  const dir = await mkdtemp(join(tmpdir(), 'model-switch-'));
  const models = join(dir, 'config.json');
  const lexical = (model: string, dimensions: number) => ({ model, name: model, provider: 'local-lexical', dimensions, defaultToken: 512, maxToken: 3000, weight: 100 });
  await writeFile(
    models,
    JSON.stringify({
      llmModels: [],
      vectorModels: [{ model: 'fake-embed', name: 'Fake embed', provider: 'openai', defaultToken: 512, maxToken: 3000, weight: 100, requestUrl: provider.baseUrl }, lexical('lex-b', 256), lexical('lex-c', 128)],
    }),
  );
  t = await buildTestApp({ MODEL_CONFIG_PATH: models, TRAINING_WORKER: 'false' });
  await createUser(t, { username: 'switcher', password: 'password-s1' });
  api = client(t, await login(t, 'switcher', 'password-s1'));
});

afterAll(async () => {
  await t?.close();
  await provider?.close();
});

const db = (): Db => t.app.mongo.db;

/** Holds embedding requests for `text` until the returned `open` is called. */
function holdEmbeddings(text: string): { seen: Promise<void>; open: () => void } {
  let seen: () => void = () => undefined;
  let open: () => void = () => undefined;
  const seenPromise = new Promise<void>((resolve) => {
    seen = resolve;
  });
  gate = { text, seen, open: new Promise<void>((resolve) => (open = resolve)) };
  return {
    seen: seenPromise,
    open: () => {
      gate = undefined;
      open();
    },
  };
}

async function datasetWithItems(model: string, texts: string[]) {
  const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: `On ${model}`, vectorModel: model }));
  const collectionId = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'c', type: 'virtual' }));
  for (const q of texts) await api.ok(api.post('/core/dataset/data/insertData', { collectionId, q }));
  return { datasetId, collectionId };
}

/** The dataset's model as stored and how many of its vectors each model has. */
async function modelsOf(datasetId: string) {
  const dataset = await db().collection('datasets').findOne({ _id: new ObjectId(datasetId) });
  const vectors = await db().collection('dataset_vectors').find({ datasetId: new ObjectId(datasetId) }).toArray();
  const byModel: Record<string, number> = {};
  for (const vector of vectors) byModel[vector.model] = (byModel[vector.model] ?? 0) + 1;
  return { model: dataset?.vectorModel as string, byModel };
}

const searchIds = async (datasetId: string, text: string) =>
  (await api.ok<{ list: { id: string }[] }>(api.post('/core/dataset/searchTest', { datasetId, text, searchMode: 'embedding', similarity: 0, limit: 5000 }))).list.map((hit) => hit.id);

describe('vector model switch races', () => {
  it('two switches at once to different models: one wins, the other gets 409, every vector ends on the winner', async () => {
    const { datasetId } = await datasetWithItems(
      'lex-b',
      Array.from({ length: 12 }, (_, i) => `question number ${i} about topic ${i * 7}`),
    );
    const [first, second] = await Promise.all([
      api.post('/core/dataset/training/rebuildEmbedding', { datasetId, vectorModel: 'local-lexical-v1' }),
      api.post('/core/dataset/training/rebuildEmbedding', { datasetId, vectorModel: 'lex-c' }),
    ]);
    expect([first.status, second.status].sort()).toEqual([200, 409]);
    await t.app.datasets.trainingWorker.drain();
    const { model, byModel } = await modelsOf(datasetId);
    expect(model).toBe(first.status === 200 ? 'local-lexical-v1' : 'lex-c');
    expect(byModel).toEqual({ [model]: 12 });
  });

  it('an insertData embedding with the old model while the switch happens stores its item on the new one', async () => {
    const { datasetId, collectionId } = await datasetWithItems('fake-embed', ['Existing item about ferries.']);
    const held = holdEmbeddings('Late item about lighthouses');
    const inserting = api.post('/core/dataset/data/insertData', { collectionId, q: 'Late item about lighthouses.' });
    await held.seen;
    await api.ok(api.post('/core/dataset/training/rebuildEmbedding', { datasetId, vectorModel: 'lex-b' }));
    held.open();
    const lateId = await api.ok<string>(inserting);
    await t.app.datasets.trainingWorker.drain();
    expect(await modelsOf(datasetId)).toEqual({ model: 'lex-b', byModel: { 'lex-b': 2 } });
    expect(await searchIds(datasetId, 'Late item about lighthouses.')).toContain(lateId);
  });

  it('a data update embedding with the old model while the item is rebuilt stores its new index on the new model', async () => {
    const { datasetId, collectionId } = await datasetWithItems('fake-embed', ['Harbour schedules for the winter.']);
    const [item] = await db().collection('dataset_datas').find({ collectionId: new ObjectId(collectionId) }).toArray();
    const held = holdEmbeddings('Harbour schedules for the summer');
    const updating = api.post('/core/dataset/data/update', { dataId: String(item!._id), q: 'Harbour schedules for the summer.' });
    await held.seen;
    // The switch and the item's rebuild both land before the update writes: it plans again from the rebuilt item.
    await api.ok(api.post('/core/dataset/training/rebuildEmbedding', { datasetId, vectorModel: 'lex-b' }));
    await t.app.datasets.trainingWorker.drain();
    held.open();
    await api.ok(updating);
    await t.app.datasets.trainingWorker.drain();
    expect(await modelsOf(datasetId)).toEqual({ model: 'lex-b', byModel: { 'lex-b': 1 } });
    expect(await searchIds(datasetId, 'Harbour schedules for the summer.')).toContain(String(item!._id));
  });

  it('a queue item carrying the model its push read before a switch is trained with the new model', async () => {
    const { datasetId, collectionId } = await datasetWithItems('fake-embed', []);
    await api.ok(api.post('/core/dataset/training/rebuildEmbedding', { datasetId, vectorModel: 'lex-b' }));
    // What a push that authorised against the dataset before the switch queues (its read model lags the switch by a lease).
    const { teamId, tmbId } = (await db().collection('datasets').findOne({ _id: new ObjectId(datasetId) }))!;
    await t.app.datasets.ctx.repos.trainings.insertMany([
      { _id: String(new ObjectId()), teamId: String(teamId), tmbId: String(tmbId), datasetId, collectionId, billId: '', mode: 'chunk', model: 'fake-embed', prompt: '', q: 'Queued before the switch.', a: '', chunkIndex: 0, weight: 0, indexes: [] },
    ]);
    await t.app.datasets.trainingWorker.drain();
    expect(await modelsOf(datasetId)).toEqual({ model: 'lex-b', byModel: { 'lex-b': 1 } });
  });
});
