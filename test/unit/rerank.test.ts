import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProviderError } from '../../src/infra/provider-http.js';
import { rerank } from '../../src/infra/rerank.js';
import type { ReRankModel } from '../../src/domain/models.js';
import { type FakeModelProvider, startFakeModelProvider } from '../helpers/fake-model-provider.js';

const documents = [
  { id: 'd1', text: 'Bananas are yellow.' },
  { id: 'd2', text: 'Reset your password in settings.' },
  { id: 'd3', text: 'Password rules: 8 characters.' },
];
const errorOf = async (promise: Promise<unknown>) => promise.then(() => undefined, (error: unknown) => error as ProviderError);

describe('rerank (local server speaking the /rerank protocol)', () => {
  let server: FakeModelProvider;
  let model: ReRankModel;
  beforeAll(async () => {
    server = await startFakeModelProvider();
    model = { model: 'bge-reranker', name: 'Reranker', requestUrl: `${server.baseUrl}/rerank`, requestAuth: 'rerank-key' };
  });
  afterAll(() => server.close());

  it('posts {model, query, documents} and returns ids by relevance', async () => {
    server.handler = (request) => {
      const { documents: texts, query } = request.body as { documents: string[]; query: string };
      const words = query.toLowerCase().split(' ');
      const results = texts.map((text, index) => ({
        index,
        relevance_score: words.filter((word) => text.toLowerCase().includes(word)).length / words.length,
      }));
      return { json: { id: 'r1', results: results.sort((a, b) => b.relevance_score - a.relevance_score) } };
    };
    const hits = await rerank(model, 'reset password', documents, { timeoutMs: 2000, apiKey: 'ignored-default' });
    const last = server.requests.at(-1)!;
    expect(last.path).toBe('/v1/rerank');
    expect(last.headers.authorization).toBe('Bearer rerank-key');
    expect(last.body).toEqual({ model: 'bge-reranker', query: 'reset password', documents: documents.map((d) => d.text) });
    expect(hits).toEqual([
      { id: 'd2', score: 1, index: 1 },
      { id: 'd3', score: 0.5, index: 2 },
      { id: 'd1', score: 0, index: 0 },
    ]);
  });

  it('sorts by score even when the provider does not, and tolerates omitted documents', async () => {
    server.handler = () => ({ json: { results: [{ index: 0, relevance_score: 0.1 }, { index: 2, relevance_score: 0.9 }] } });
    const hits = await rerank(model, 'q', documents, { timeoutMs: 2000 });
    expect(hits.map((hit) => hit.id)).toEqual(['d3', 'd1']);
  });

  it('falls back to {baseUrl}/rerank without a requestUrl and skips the call for no documents', async () => {
    server.handler = () => ({ json: { results: [{ index: 0, relevance_score: 0.7 }] } });
    const before = server.requests.length;
    expect(await rerank({ model: 'm', name: 'm' }, 'q', [], { baseUrl: server.baseUrl, timeoutMs: 2000 })).toEqual([]);
    expect(server.requests.length).toBe(before);
    const hits = await rerank({ model: 'm', name: 'm' }, 'q', documents.slice(0, 1), { baseUrl: server.baseUrl, apiKey: 'k', timeoutMs: 2000 });
    expect(hits).toEqual([{ id: 'd1', score: 0.7, index: 0 }]);
    expect(server.requests.at(-1)!.headers.authorization).toBe('Bearer k');
  });

  it.each([
    ['HTTP error with message', { status: 503, json: { error: { message: 'model loading' } } }, /HTTP 503: model loading/],
    ['no results', { json: { data: [] } }, /no results list/],
    ['index out of range', { json: { results: [{ index: 7, relevance_score: 1 }] } }, /unexpected index 7/],
    ['missing score', { json: { results: [{ index: 0 }] } }, /no relevance score/],
  ])('%s → ProviderError', async (_name, answer, message) => {
    server.handler = () => answer;
    const error = await errorOf(rerank(model, 'q', documents, { timeoutMs: 2000 }));
    expect(error).toBeInstanceOf(ProviderError);
    expect(error!.message).toMatch(message);
    expect(error!.message).toContain('bge-reranker');
  });

  it('times out and reports a missing URL', async () => {
    server.handler = () => ({ delayMs: 1500, json: { results: [] } });
    expect((await errorOf(rerank(model, 'q', documents, { timeoutMs: 150 })))?.kind).toBe('timeout');
    expect((await errorOf(rerank({ model: 'm', name: 'm' }, 'q', documents, { timeoutMs: 150 })))?.kind).toBe('not_configured');
  });
});
