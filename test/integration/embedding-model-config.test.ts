/**
 * Dataset model calls against a configured remote embedding model:
 * - its extra request fields (`defaultConfig`, then `dbConfig` when storing and `queryConfig`
 *   when searching) reach the provider on every path that embeds;
 * - what those calls use is recorded and priced (data inserts and updates, searchTest with its
 *   query extension, the workflow's dataset search), and counts against the API key used.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { simpleFormToWorkflow } from '../../src/domain/workflow/simple-app.js';
import { loadModelCatalog } from '../../src/platform/system/model-config.js';
import { buildTestApp, type TestApp, testConfig } from '../helpers/app.js';
import { openAiEmbeddingAnswer } from '../helpers/fake-model-provider.js';
import { type FakeOpenAi, fakeModelConfig, startFakeOpenAi } from '../helpers/fake-openai.js';
import { apiKeyHeaders, authHeaders, createApiKey, createUser, login } from '../helpers/platform.js';
import { type Client, client } from '../fixtures/datasets/client.js';
import { createPublishedApp } from './chat-helpers.js';

let t: TestApp;
let api: Client;
let token: string;
let fake: FakeOpenAi;
let dir: string;
let datasetId: string;
let collectionId: string;

/** One point per token: the fake provider reports 3 tokens per text embedded. */
const embedModel = (baseUrl: string) => ({
  model: 'typed-embed',
  name: 'Typed embedding',
  defaultToken: 512,
  maxToken: 3000,
  charsPointsPrice: 1000,
  requestUrl: baseUrl,
  defaultConfig: { dimensions: 8, input_type: 'unspecified' },
  dbConfig: { input_type: 'document' },
  queryConfig: { input_type: 'query' },
});

/** The embedding requests since `from`: their `input_type`, texts, dimensions and model. */
const embeddingsSince = (from: number) =>
  fake.requests
    .slice(from)
    .filter((request) => request.path === '/v1/embeddings')
    .map((request) => {
      const body = request.body as { input: string[]; input_type: string; dimensions: number; model: string };
      return { type: body.input_type, input: body.input, dimensions: body.dimensions, model: body.model };
    });

const usages = () => t.app.mongo.db.collection('usages');
/** The usage records written since the last `beforeEach`, as [appName, source, totalPoints, lines]. */
async function recorded() {
  await t.app.identity.usage.drain();
  const records = await usages().find({ source: { $ne: 'training' } }).sort({ _id: 1 }).toArray();
  return records.map((r) => [r.appName, r.source, r.totalPoints, r.list.map((line: { moduleName: string; amount: number; model: string; tokens: number }) => [line.moduleName, line.amount, line.model, line.tokens])]);
}

beforeAll(async () => {
  fake = await startFakeOpenAi();
  fake.route('POST', '/v1/embeddings', (request) => openAiEmbeddingAnswer((request.body as { input: string[] }).input));
  dir = await mkdtemp(join(tmpdir(), 'embedding-config-'));
  await writeFile(join(dir, 'config.json'), JSON.stringify({ ...fakeModelConfig(fake.baseUrl), vectorModels: [embedModel(fake.baseUrl)] }));
  t = await buildTestApp({ MODEL_CONFIG_PATH: join(dir, 'config.json'), SSRF_ALLOW_PRIVATE: 'true' });
  await createUser(t, { username: 'typed', password: 'password-ty1' });
  token = await login(t, 'typed', 'password-ty1');
  api = client(t, token);
  datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Typed', vectorModel: 'typed-embed' }));
  collectionId = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'notes', type: 'virtual' }));
});

beforeEach(async () => {
  await t.app.identity.usage.drain();
  await usages().deleteMany({});
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('vector model request config', () => {
  it('stores with dbConfig (insert, update and training queue) and searches with queryConfig', async () => {
    let from = fake.requests.length;
    const dataId = await api.ok<string>(api.post('/core/dataset/data/insertData', { collectionId, q: 'opening hours of the office' }));
    expect(embeddingsSince(from)).toEqual([{ type: 'document', input: ['opening hours of the office'], dimensions: 8, model: 'typed-embed' }]);

    from = fake.requests.length;
    await api.ok(api.post('/core/dataset/data/update', { dataId, q: 'opening hours of the main office' }));
    expect(embeddingsSince(from)).toEqual([{ type: 'document', input: ['opening hours of the main office'], dimensions: 8, model: 'typed-embed' }]);

    from = fake.requests.length;
    await api.ok(api.post('/core/dataset/data/pushData', { collectionId, data: [{ q: 'refunds take ten days' }] }));
    await t.app.datasets.trainingWorker.drain();
    expect(embeddingsSince(from)).toEqual([{ type: 'document', input: ['refunds take ten days'], dimensions: 8, model: 'typed-embed' }]);

    from = fake.requests.length;
    const result = await api.ok<{ list: { q: string }[] }>(api.post('/core/dataset/searchTest', { datasetId, text: 'when is the office open', similarity: 0 }));
    expect(result.list.map((item) => item.q)).toContain('opening hours of the main office');
    expect(embeddingsSince(from)).toEqual([{ type: 'query', input: ['when is the office open'], dimensions: 8, model: 'typed-embed' }]);
  });

  it('/v1/embeddings takes `type` (query or db) to pick the config, and only defaultConfig without it', async () => {
    const embed = (payload: Record<string, unknown>) => t.app.inject({ method: 'POST', url: '/api/v1/embeddings', headers: authHeaders(token), payload });
    const from = fake.requests.length;
    for (const type of ['query', 'db', undefined]) {
      const res = await embed({ input: 'hello', model: 'typed-embed', ...(type ? { type } : {}) });
      expect(res.statusCode, res.body).toBe(200);
    }
    expect(embeddingsSince(from).map((request) => request.type)).toEqual(['query', 'document', 'unspecified']);
    const wrong = await embed({ input: 'hello', model: 'typed-embed', type: 'document' });
    expect(wrong.statusCode).toBe(400);
    expect(wrong.json().message).toMatch(/type/);
  });

  it('refuses a configuration whose request config is not an object, naming the field', async () => {
    const bad = join(dir, 'bad.json');
    await writeFile(bad, JSON.stringify({ vectorModels: [{ ...embedModel('http://127.0.0.1:1/v1'), dbConfig: 'input_type=document' }] }));
    await expect(loadModelCatalog(testConfig({ MODEL_CONFIG_PATH: bad }))).rejects.toThrow(/vectorModels\.0\.dbConfig/);
  });
});

describe('usage of dataset model calls', () => {
  it('bills data inserts and updates that embed now, not an update that embeds nothing', async () => {
    const dataId = await api.ok<string>(api.post('/core/dataset/data/insertData', { collectionId, q: 'parking is behind the building', a: 'enter by gate 12' }));
    await api.ok(api.post('/core/dataset/data/update', { dataId, q: 'parking is behind the north building' }));
    // The same text again: nothing to embed, nothing billed.
    await api.ok(api.post('/core/dataset/data/update', { dataId, q: 'parking is behind the north building' }));
    // Only empty texts: nothing changes (as the reference), nothing billed.
    await api.ok(api.post('/core/dataset/data/update', { dataId, a: '' }));
    expect(await api.ok(api.get('/core/dataset/data/detail', { id: dataId }))).toMatchObject({ q: 'parking is behind the north building', a: 'enter by gate 12' });
    // Two texts embedded at the insert (the default index of q and a, and q alone), one at the edit.
    expect(await recorded()).toEqual([
      ['Data index', 'fastgpt', 6, [['Embeddings', 6, 'Typed embedding', 6]]],
      ['Data index', 'fastgpt', 3, [['Embeddings', 3, 'Typed embedding', 3]]],
    ]);
  });

  it('bills searchTest (query embedding and query extension) and counts it against the API key, whose limit then holds', async () => {
    fake.reply = () => '["office opening hours"]';
    await api.ok(api.post('/core/dataset/searchTest', { datasetId, text: 'office', datasetSearchExtensionModel: 'fake-llm' }));
    const [record] = await recorded();
    // Two queries embedded (3 tokens each); the extension's 15 tokens at the LLM's 100 per 1000.
    expect(record).toEqual(['Search test', 'fastgpt', 6 + 1.5, [['Dataset search', 6, 'Typed embedding', 6], ['Query extension', 1.5, 'Fake LLM', 15]]]);

    const key = await createApiKey(t, token, { name: 'search key', limit: { maxUsagePoints: 5 } });
    const viaKey = () => t.app.inject({ method: 'POST', url: '/api/core/dataset/searchTest', headers: apiKeyHeaders(key), payload: { datasetId, text: 'refunds' } });
    expect((await viaKey()).statusCode).toBe(200);
    expect((await viaKey()).statusCode).toBe(200);
    const keyDoc = await t.app.mongo.db.collection('openapis').findOne({ name: 'search key' });
    expect(keyDoc?.usagePoints).toBe(6);
    const refused = await viaKey();
    expect(refused.statusCode).toBe(403);
    expect((await recorded()).slice(1).map((r) => r.slice(0, 3))).toEqual([
      ['Search test', 'api', 3],
      ['Search test', 'api', 3],
    ]);
  });

  it("prices the workflow's dataset search at the vector model's price", async () => {
    // The simple form's search extends the question first (one rewrite: two queries embedded).
    fake.reply = (messages) => (JSON.stringify(messages).includes('office hours') && messages.length === 1 ? '["when is the office open"]' : 'It opens at nine.');
    const graph = simpleFormToWorkflow({ aiSettings: { model: 'fake-llm' }, dataset: { datasets: [{ datasetId }], searchMode: 'embedding', similarity: 0 } });
    // Usage lines carry the node's own name, as the reference records them.
    for (const node of graph.nodes) if (node.flowNodeType === 'datasetSearchNode') node.name = 'Office handbook';
    const appId = await createPublishedApp(t, token, 'Typed bot', { ...graph, chatConfig: {} });
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: authHeaders(token), payload: { appId, detail: true, messages: [{ role: 'user', content: 'office hours' }] } });
    expect(res.statusCode, res.body).toBe(200);
    const search = res.json().responseData.find((r: { moduleType: string }) => r.moduleType === 'datasetSearchNode');
    expect(search).toMatchObject({ totalPoints: 6 + 1.5, model: 'Typed embedding', tokens: 6 });
    const [turn] = await recorded();
    expect(turn?.[3]).toContainEqual(['Office handbook', 6, 'Typed embedding', 6]);
    expect(turn?.[3]).toContainEqual(['Query extension', 1.5, 'Fake LLM', 15]);
  });
});

describe('a failing embedding provider', () => {
  it('is a 502 naming the provider on searchTest and insertData, never a 500, and stores nothing', async () => {
    fake.route('POST', '/v1/embeddings', () => ({ status: 401, json: { error: { message: 'Incorrect API key provided' } } }));
    try {
      const before = await t.app.mongo.db.collection('dataset_datas').countDocuments({ collectionId: { $exists: true } });
      for (const [path, body] of [
        ['/core/dataset/searchTest', { datasetId, text: 'anything', searchMode: 'embedding' }],
        ['/core/dataset/data/insertData', { collectionId, q: 'never stored' }],
      ] as const) {
        const response = await t.app.inject({ method: 'POST', url: `/api${path}`, headers: authHeaders(token), payload: body });
        expect(response.statusCode, `${path}: ${response.body}`).toBe(502);
        expect(response.json().message).toMatch(/Incorrect API key provided/);
      }
      expect(await t.app.mongo.db.collection('dataset_datas').countDocuments({ collectionId: { $exists: true } })).toBe(before);
    } finally {
      fake.route('POST', '/v1/embeddings', (request) => openAiEmbeddingAnswer((request.body as { input: string[] }).input));
    }
  });
});
