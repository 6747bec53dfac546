import { type Db, ObjectId } from 'mongodb';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, client } from '../fixtures/datasets/client.js';
import { queueNextRebuild } from '../../src/platform/datasets/training/rebuild.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { type FakeModelProvider, openAiEmbeddingAnswer, startFakeModelProvider } from '../helpers/fake-model-provider.js';
import { createUser, login } from '../helpers/platform.js';

/**
 * A rebuild runs as a few chains of queue items, each queueing the next flagged data item when
 * it is done. A chain link whose item cannot be re-embedded (its data item or collection deleted,
 * the provider refusing it for good) still hands the chain on: no item stays flagged and
 * never re-embedded while the queue is empty.
 */
let provider: FakeModelProvider;
let t: TestApp;
let api: Client;
/** Texts the fake embedding provider refuses (a request holding one fails). */
const refused = new Set<string>();
const LATER = (minutes: number) => new Date(Date.now() + minutes * 60_000);

beforeAll(async () => {
  provider = await startFakeModelProvider(async (request) => {
    if (request.path.endsWith('/embeddings')) {
      const input = (request.body as { input: string[] }).input;
      if (input.some((text) => refused.has(text))) return { status: 400, json: { error: { message: 'input refused' } } };
      return openAiEmbeddingAnswer(input);
    }
    return { status: 404, json: {} };
  });
  const dir = await mkdtemp(join(tmpdir(), 'rebuild-chains-'));
  const configPath = join(dir, 'config.json');
  await writeFile(
    configPath,
    JSON.stringify({
      llmModels: [],
      vectorModels: [{ model: 'fake-embed', name: 'Fake embed', provider: 'openai', defaultToken: 512, maxToken: 3000, weight: 100, requestUrl: provider.baseUrl }],
    }),
  );
  t = await buildTestApp({ MODEL_CONFIG_PATH: configPath });
  await createUser(t, { username: 'rebuilder', password: 'password-r1' });
  api = client(t, await login(t, 'rebuilder', 'password-r1'));
});

afterAll(async () => {
  await t?.close();
  await provider?.close();
});

const db = (): Db => t.app.mongo.db;
const worker = () => t.app.datasets.trainingWorker;
const queue = (datasetId: string) =>
  api.ok<{ trainingCount: number; rebuildingCount: number; failedItems: { errorMsg: string }[] }>(api.get('/core/dataset/training/getDatasetTrainingQueue', { datasetId }));

/** A dataset on `model` with a trained item per text in each named collection. */
async function trainedDataset(model: string, collections: Record<string, string[]>) {
  const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: `Chains ${Object.keys(collections).join(' ')}`, vectorModel: model }));
  const ids: Record<string, string> = {};
  for (const [name, texts] of Object.entries(collections)) {
    ids[name] = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name, type: 'virtual' }));
    await api.ok(api.post('/core/dataset/data/pushData', { collectionId: ids[name], data: texts.map((q) => ({ q })) }));
  }
  await worker().drain();
  const dataset = await db().collection('datasets').findOne({ _id: new ObjectId(datasetId) });
  return { datasetId, collections: ids, teamId: String(dataset?.teamId), tmbId: String(dataset?.tmbId) };
}

/** Data items queued for their rebuild (the head of each chain). */
async function queuedRebuilds(datasetId: string) {
  const items = await db().collection('dataset_trainings').find({ datasetId: new ObjectId(datasetId), dataId: { $exists: true } }).toArray();
  return items.map((item) => String(item.dataId));
}

/** Each remaining data item of the dataset points to vectors of `model` only, one per index. */
async function expectAllOn(datasetId: string, model: string, count: number) {
  const items = await db().collection('dataset_datas').find({ datasetId: new ObjectId(datasetId) }).toArray();
  expect(items).toHaveLength(count);
  const vectors = await db().collection('dataset_vectors').find({ datasetId: new ObjectId(datasetId) }).toArray();
  const byId = new Map(vectors.map((vector) => [String(vector._id), vector]));
  for (const item of items) {
    expect(item.rebuilding).toBeUndefined();
    for (const index of item.indexes as { dataId: string }[]) expect(byId.get(index.dataId)?.model).toBe(model);
  }
  expect(new Set(vectors.map((vector) => vector.model))).toEqual(new Set([model]));
}

describe('rebuild chains', () => {
  it('go on past chain items whose data item was deleted before the worker reached them', async () => {
    const texts = Array.from({ length: 26 }, (_, i) => `deleted head ${i}`);
    const { datasetId } = await trainedDataset('local-lexical-v1', { c: texts });
    expect(await api.ok(api.post('/core/dataset/training/rebuildEmbedding', { datasetId, vectorModel: 'fake-embed' }))).toEqual({});
    const heads = await queuedRebuilds(datasetId);
    for (const id of heads) await api.ok(api.post('/core/dataset/data/delete', { id }));
    // Every chain starts on a deleted item, and items are still waiting behind them.
    expect((await queue(datasetId)).rebuildingCount).toBe(texts.length - heads.length);
    expect(texts.length - heads.length).toBeGreaterThan(0);

    await worker().drain();
    expect(await queue(datasetId)).toMatchObject({ trainingCount: 0, rebuildingCount: 0 });
    await expectAllOn(datasetId, 'fake-embed', texts.length - heads.length);
  });

  it('go on past chain items of a collection deleted before the worker reached them', async () => {
    const gone = ['gone one', 'gone two', 'gone three'];
    const kept = ['kept one', 'kept two', 'kept three', 'kept four'];
    const { datasetId, collections, teamId, tmbId } = await trainedDataset('local-lexical-v1', { gone, kept });
    const { ctx } = t.app.datasets;
    // rebuildEmbedding's steps, with the chains started while only `gone` was flagged: every
    // chain starts in the collection deleted next.
    await ctx.repos.data.markRebuilding(teamId, datasetId);
    await db().collection('dataset_datas').updateMany({ collectionId: new ObjectId(collections.kept) }, { $unset: { rebuilding: '' } });
    await ctx.repos.datasets.update(teamId, datasetId, { vectorModel: 'fake-embed' });
    await ctx.searchIndex.switchModel(datasetId, 'fake-embed');
    const base = { teamId, tmbId, datasetId, billId: '', mode: 'chunk' as const, model: 'fake-embed', prompt: '', weight: 100 };
    while (await queueNextRebuild(ctx, base));
    await db().collection('dataset_datas').updateMany({ collectionId: new ObjectId(collections.kept) }, { $set: { rebuilding: true } });
    expect(await queuedRebuilds(datasetId)).toHaveLength(gone.length);

    await api.ok(api.del('/core/dataset/collection/delete', { id: collections.gone! }));
    await worker().drain();
    expect(await queue(datasetId)).toMatchObject({ trainingCount: 0, rebuildingCount: 0 });
    await expectAllOn(datasetId, 'fake-embed', kept.length);
  });

  it('go on past chain items the provider refuses for good (those stay queued with their error)', async () => {
    const texts = Array.from({ length: 24 }, (_, i) => `refused head ${i}`);
    const { datasetId } = await trainedDataset('local-lexical-v1', { c: texts });
    expect(await api.ok(api.post('/core/dataset/training/rebuildEmbedding', { datasetId, vectorModel: 'fake-embed' }))).toEqual({});
    const heads = await queuedRebuilds(datasetId);
    const headItems = await db().collection('dataset_datas').find({ _id: { $in: heads.map((id) => new ObjectId(id)) } }).toArray();
    for (const item of headItems) refused.add(String(item.q));
    const waiting = texts.length - heads.length;
    expect(waiting).toBeGreaterThan(0);
    try {
      // Failures back off; later clocks reach each retry until the items give up.
      for (let round = 1; round <= 8; round++) await worker().drain(LATER(round * 60));
    } finally {
      refused.clear();
    }
    const state = await queue(datasetId);
    expect(state).toMatchObject({ trainingCount: heads.length, rebuildingCount: 0 });
    expect(state.failedItems).toHaveLength(Math.min(20, heads.length));
    for (const failed of state.failedItems) expect(failed.errorMsg).toContain('refused');
    // The items after them were re-embedded, none of them queued twice (the queue holds only the refused ones).
    const rebuilt = await db().collection('dataset_datas').find({ datasetId: new ObjectId(datasetId), _id: { $nin: heads.map((id) => new ObjectId(id)) } }).toArray();
    expect(rebuilt).toHaveLength(waiting);
    const vectors = await db().collection('dataset_vectors').find({ dataId: { $in: rebuilt.map((item) => item._id) } }).toArray();
    expect(vectors.length).toBeGreaterThan(0);
    for (const item of rebuilt) {
      expect(item.rebuilding).toBeUndefined();
      for (const index of item.indexes as { dataId: string }[]) expect(vectors.find((vector) => String(vector._id) === index.dataId)?.model).toBe('fake-embed');
    }
  });
});
