/**
 * A vector model's extra request fields (`defaultConfig`, then `dbConfig` when storing and
 * `queryConfig` when searching) reach the provider on every path that embeds: a data insert,
 * the training queue, a search and /v1/embeddings with its `type`.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadModelCatalog } from '../../src/platform/system/model-config.js';
import { buildTestApp, type TestApp, testConfig } from '../helpers/app.js';
import { type FakeModelProvider, openAiEmbeddingAnswer, startFakeModelProvider } from '../helpers/fake-model-provider.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { type Client, client } from '../fixtures/datasets/client.js';

let t: TestApp;
let api: Client;
let token: string;
let provider: FakeModelProvider;
let dir: string;

const embedModel = (baseUrl: string) => ({
  model: 'typed-embed',
  name: 'Typed embedding',
  defaultToken: 512,
  maxToken: 3000,
  requestUrl: baseUrl,
  defaultConfig: { dimensions: 8, input_type: 'unspecified' },
  dbConfig: { input_type: 'document' },
  queryConfig: { input_type: 'query' },
});

/** The `input_type` of each embedding request since `from`, with its texts. */
const seen = (from: number) =>
  provider.requests.slice(from).map((request) => {
    const body = request.body as { input: string[]; input_type: string; dimensions: number; model: string };
    return { type: body.input_type, input: body.input, dimensions: body.dimensions, model: body.model };
  });

beforeAll(async () => {
  provider = await startFakeModelProvider((request) => openAiEmbeddingAnswer((request.body as { input: string[] }).input));
  dir = await mkdtemp(join(tmpdir(), 'embedding-config-'));
  await writeFile(join(dir, 'config.json'), JSON.stringify({ vectorModels: [embedModel(provider.baseUrl)] }));
  t = await buildTestApp({ MODEL_CONFIG_PATH: join(dir, 'config.json'), SSRF_ALLOW_PRIVATE: 'true' });
  await createUser(t, { username: 'typed', password: 'password-ty1' });
  token = await login(t, 'typed', 'password-ty1');
  api = client(t, token);
});

afterAll(async () => {
  await t?.close();
  await provider?.close();
});

describe('vector model request config', () => {
  it('stores with dbConfig (insert and training queue) and searches with queryConfig', async () => {
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Typed', vectorModel: 'typed-embed' }));
    const collectionId = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'notes', type: 'virtual' }));

    let from = provider.requests.length;
    await api.ok(api.post('/core/dataset/data/insertData', { collectionId, q: 'opening hours of the office' }));
    expect(seen(from)).toEqual([{ type: 'document', input: ['opening hours of the office'], dimensions: 8, model: 'typed-embed' }]);

    from = provider.requests.length;
    await api.ok(api.post('/core/dataset/data/pushData', { collectionId, data: [{ q: 'refunds take ten days' }] }));
    await t.app.datasets.trainingWorker.drain();
    expect(seen(from)).toEqual([{ type: 'document', input: ['refunds take ten days'], dimensions: 8, model: 'typed-embed' }]);

    from = provider.requests.length;
    const result = await api.ok<{ list: { q: string }[] }>(api.post('/core/dataset/searchTest', { datasetId, text: 'when is the office open', similarity: 0 }));
    expect(result.list.map((item) => item.q)).toContain('opening hours of the office');
    expect(seen(from)).toEqual([{ type: 'query', input: ['when is the office open'], dimensions: 8, model: 'typed-embed' }]);
  });

  it('/v1/embeddings takes `type` (query or db) to pick the config, and only defaultConfig without it', async () => {
    const embed = (payload: Record<string, unknown>) => t.app.inject({ method: 'POST', url: '/api/v1/embeddings', headers: authHeaders(token), payload });
    const from = provider.requests.length;
    for (const type of ['query', 'db', undefined]) {
      const res = await embed({ input: 'hello', model: 'typed-embed', ...(type ? { type } : {}) });
      expect(res.statusCode, res.body).toBe(200);
    }
    expect(seen(from).map((request) => request.type)).toEqual(['query', 'document', 'unspecified']);
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
