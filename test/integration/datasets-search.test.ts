import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_SEARCH_QUERIES } from '../../src/domain/workflow/prompts.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { type FakeAnswer, type FakeModelProvider, startFakeModelProvider } from '../helpers/fake-model-provider.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { type Client, client } from '../fixtures/datasets/client.js';

const CORPUS = [
  'How to reset a password: open settings, choose security, then click reset password.',
  'Shipping takes three to five business days within the country.',
  'Refunds are issued to the original payment method within ten days.',
  'Our API rate limit is one hundred requests per minute per key.',
];
const OFFICE = 'The office is open Monday to Friday from nine to five, "closed" on holidays.';

let t: TestApp;
let api: Client;
let token: string;
let provider: FakeModelProvider;
let datasetId: string;
let officeCollection: string;

/** The query rewrites the fake LLM answers (a JSON array in its reply), or a failure. */
let rewrites: string[] | 'fail' = [];
function extensionAnswer(): FakeAnswer {
  if (rewrites === 'fail') return { status: 500, json: { error: { message: 'the model is down' } } };
  const content = `Here you are: ${JSON.stringify(rewrites)}`;
  return { json: { choices: [{ message: { role: 'assistant', content } }], usage: { prompt_tokens: 20, completion_tokens: 10 } } };
}

interface SearchResult {
  list: { q: string; a: string; sourceName: string; collectionId: string; score: { type: string; value: number; index: number }[] }[];
  searchMode: string;
  usingReRank: boolean;
  usingSimilarityFilter: boolean;
  duration: string;
  queryExtensionModel?: string;
}

beforeAll(async () => {
  provider = await startFakeModelProvider((request) => {
    if (request.path.endsWith('/chat/completions')) return extensionAnswer();
    const documents = (request.body as { documents: string[] }).documents;
    // Prefers documents mentioning "office", then keeps the given order.
    const order = documents.map((text, index) => ({ index, relevance_score: text.includes('office') ? 0.9 : 0.1 / (index + 1) }));
    return { json: { results: order.sort((a, b) => b.relevance_score - a.relevance_score) } };
  });
  const dir = await mkdtemp(join(tmpdir(), 'datasets-search-'));
  await writeFile(join(dir, 'config.json'), JSON.stringify({
      reRankModels: [{ model: 'fake-rerank', name: 'Fake rerank', requestUrl: `${provider.baseUrl}/rerank` }],
      llmModels: [{ model: 'fake-llm', name: 'Fake LLM', maxContext: 16000, maxResponse: 4000, quoteMaxToken: 8000, requestUrl: provider.baseUrl }],
    }));
  t = await buildTestApp({ MODEL_CONFIG_PATH: join(dir, 'config.json'), PLAN_EXPORT_INTERVAL_MINUTES: '30' });
  await createUser(t, { username: 'searcher', password: 'password-s1' });
  token = await login(t, 'searcher', 'password-s1');
  api = client(t, token);
  datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Help center' }));
  const main = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'faq', type: 'virtual' }));
  officeCollection = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'office', type: 'virtual' }));
  await api.ok(api.post('/core/dataset/data/pushData', { collectionId: main, data: CORPUS.map((q, chunkIndex) => ({ q, chunkIndex })) }));
  await api.ok(api.post('/core/dataset/data/insertData', { collectionId: officeCollection, q: OFFICE, a: 'Ask "reception".' }));
  await t.app.datasets.trainingWorker.drain();
});

afterAll(async () => {
  await t?.close();
  await provider?.close();
});

const search = (body: Record<string, unknown>) => api.ok<SearchResult>(api.post('/core/dataset/searchTest', { datasetId, ...body }));

describe('searchTest', () => {
  it('embedding search ranks the matching chunk first, without an rrf score', async () => {
    const result = await search({ text: 'I forgot my password, how do I reset it?' });
    expect(result.list[0]?.q).toBe(CORPUS[0]);
    expect(result.list[0]).toMatchObject({ sourceName: 'faq' });
    expect(result.list[0]?.score.map((score) => score.type)).toEqual(['embedding']);
    expect(result).toMatchObject({ searchMode: 'embedding', usingReRank: false, usingSimilarityFilter: true });
    expect(result.duration).toMatch(/^\d+\.\d{3}s$/);
  });

  it('full-text recall ranks by BM25 over stored tokens', async () => {
    const result = await search({ text: 'refunds payment method', searchMode: 'fullTextRecall' });
    expect(result.list[0]?.q).toBe(CORPUS[2]);
    expect(result.list[0]?.score[0]?.type).toBe('fullText');
    expect(result.usingSimilarityFilter).toBe(false);
    expect(result.list.every((item) => item.q !== CORPUS[1])).toBe(true);
  });

  it('mixed recall fuses both lists with RRF', async () => {
    const result = await search({ text: 'shipping business days', searchMode: 'mixedRecall' });
    expect(result.list[0]?.q).toBe(CORPUS[1]);
    expect(result.list[0]?.score.map((score) => score.type).sort()).toEqual(['embedding', 'fullText', 'rrf']);
  });

  it('applies the similarity threshold and the token budget', async () => {
    expect((await search({ text: 'password reset', similarity: 0.999 })).list).toEqual([]);
    expect((await search({ text: 'password reset', limit: 1 })).list).toHaveLength(1);
    expect((await search({ text: 'password reset', limit: 5000 })).list.length).toBeGreaterThan(1);
    expect((await api.post('/core/dataset/searchTest', { datasetId, text: 'x', similarity: 2 })).status).toBe(400);
    expect((await api.post('/core/dataset/searchTest', { datasetId, text: '' })).status).toBe(400);
  });

  it('reranks through the configured rerank model', async () => {
    const result = await search({ text: 'when can I visit', usingReRank: true, searchMode: 'mixedRecall' });
    expect(result.usingReRank).toBe(true);
    expect(result.list[0]?.q).toBe(OFFICE);
    expect(result.list[0]?.score.some((score) => score.type === 'reRank')).toBe(true);
    // The fused score weighs recall lists with k = 60 and the rerank list with k = 58, as the reference.
    for (const item of result.list) {
      const rankIn = (type: string) => item.score.find((score) => score.type === type)?.index;
      const part = (type: string, k: number) => (rankIn(type) === undefined ? 0 : 1 / (k + rankIn(type)! + 1));
      const rrf = item.score.find((score) => score.type === 'rrf')?.value;
      expect(rrf).toBeCloseTo(part('embedding', 60) + part('fullText', 60) + part('reRank', 58), 12);
    }
  });

  it('runs query extension when a model is named: the question and its rewrites are searched, the lists merged', async () => {
    const question = 'When may I visit?';
    const asked = () => provider.requests.filter((request) => request.path.endsWith('/chat/completions'));
    const plain = await search({ text: question, searchMode: 'fullTextRecall', datasetSearchExtensionModel: 'fake-llm', datasetSearchUsingExtensionQuery: false });
    expect(plain.list).toEqual([]);
    expect(plain.queryExtensionModel).toBeUndefined();
    expect(asked()).toHaveLength(0);

    rewrites = ['office opening hours', 'refunds payment method', question];
    const extended = await search({ text: question, searchMode: 'fullTextRecall', datasetSearchExtensionModel: 'fake-llm', datasetSearchExtensionBg: 'A shop help center' });
    expect(extended.queryExtensionModel).toBe('fake-llm');
    expect(extended.list.map((item) => item.q).sort()).toEqual([CORPUS[2], OFFICE].sort());
    expect(asked()).toHaveLength(1);
    const prompt = JSON.stringify((asked()[0]!.body as { messages: unknown[] }).messages);
    expect(prompt).toContain(question);
    expect(prompt).toContain('A shop help center');

    // A failing model: the question is searched alone, the search still answers.
    rewrites = 'fail';
    const alone = await search({ text: 'office', searchMode: 'fullTextRecall', datasetSearchExtensionModel: 'fake-llm' });
    expect(alone.list.map((item) => item.q)).toEqual([OFFICE]);
    expect(asked()).toHaveLength(2);
  });

  it("bills the extension's model call when the search after it fails", async () => {
    rewrites = ['office opening hours'];
    const usages = async () => {
      await t.app.identity.usage.drain();
      return t.app.mongo.db.collection('usages').find({ appName: 'Search test' }).toArray();
    };
    const before = (await usages()).length;
    const searchPriced = t.app.datasets.search.searchPriced;
    t.app.datasets.search.searchPriced = async () => {
      throw new Error('the search failed');
    };
    try {
      const failed = await api.post('/core/dataset/searchTest', { datasetId, text: 'When may I visit?', searchMode: 'fullTextRecall', datasetSearchExtensionModel: 'fake-llm' });
      expect(failed.status).toBe(500);
    } finally {
      t.app.datasets.search.searchPriced = searchPriced;
    }
    const after = await usages();
    expect(after).toHaveLength(before + 1);
    expect(after.at(-1)!.list.map((u: { model?: string }) => u.model)).toEqual(['Fake LLM']);
  });

  it('searches a question written as a JSON array as its own query list, asking no model', async () => {
    const asked = () => provider.requests.filter((request) => request.path.endsWith('/chat/completions')).length;
    const before = asked();
    const result = await search({ text: '["office", "refunds payment method"]', searchMode: 'fullTextRecall', datasetSearchExtensionModel: 'fake-llm' });
    expect(result.list.map((item) => item.q).sort()).toEqual([CORPUS[2], OFFICE].sort());
    expect(result.queryExtensionModel).toBeUndefined();
    expect(asked()).toBe(before);
  });

  it("searches a JSON array of hundreds of queries as its first few, reranked once", async () => {
    const reranks = () => provider.requests.filter((request) => request.path.endsWith('/rerank')).length;
    const before = reranks();
    const text = JSON.stringify(Array.from({ length: 600 }, (_, i) => `office ${i}`));
    const result = await search({ text, searchMode: 'mixedRecall', usingReRank: true });
    expect(result.list[0]?.q).toBe(OFFICE);
    // One rerank call, with the searched queries joined (as the reference reranks once).
    expect(reranks() - before).toBe(1);
    const rerankQuery = (provider.requests.filter((request) => request.path.endsWith('/rerank')).at(-1)!.body as { query: string }).query;
    expect(rerankQuery.split('\n')).toEqual(Array.from({ length: MAX_SEARCH_QUERIES }, (_, i) => `office ${i}`));
  });

  it('leaves forbidden collections out', async () => {
    await api.ok(api.post('/core/dataset/collection/update', { id: officeCollection, forbid: true }));
    const result = await search({ text: 'office open Monday', searchMode: 'mixedRecall' });
    expect(result.list.some((item) => item.collectionId === officeCollection)).toBe(false);
    await api.ok(api.post('/core/dataset/collection/update', { id: officeCollection, forbid: false }));
  });
});

describe('exportAll', () => {
  it('streams a CSV with BOM and header, then respects the export interval', async () => {
    const response = await t.app.inject({ method: 'GET', url: `/api/core/dataset/exportAll?datasetId=${datasetId}`, headers: authHeaders(token) });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toContain('text/csv');
    const body = response.body;
    expect(body.startsWith('\uFEFFindex,content\n')).toBe(true);
    const lines = body.split('\n');
    expect(lines).toHaveLength(1 + CORPUS.length + 1);
    expect(body).toContain('"The office is open Monday to Friday from nine to five, ""closed"" on holidays.","Ask ""reception""."');
    const again = await t.app.inject({ method: 'GET', url: `/api/core/dataset/exportAll?datasetId=${datasetId}`, headers: authHeaders(token) });
    expect(again.statusCode).toBe(429);
  });
});
