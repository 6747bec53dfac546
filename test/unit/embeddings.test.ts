import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lexicalEmbed } from '../../src/domain/lexical-embedding.js';
import { createEmbeddingProvider, EMBEDDING_BATCH_SIZE } from '../../src/infra/embeddings.js';
import { ProviderError } from '../../src/infra/provider-http.js';
import { LOCAL_LEXICAL_VECTOR_MODEL, type VectorModel } from '../../src/domain/models.js';
import { type FakeModelProvider, letterVector, openAiEmbeddingAnswer, startFakeModelProvider } from '../helpers/fake-model-provider.js';

const remoteModel = (extra: Partial<VectorModel> = {}): VectorModel => ({
  model: 'text-embedding-test',
  name: 'Test embedding',
  defaultToken: 512,
  maxToken: 3000,
  provider: 'openai',
  ...extra,
});
const norm = (v: number[]) => Math.hypot(...v);
const errorOf = async (promise: Promise<unknown>) => promise.then(() => undefined, (error: unknown) => error as ProviderError);

describe('local-lexical embedding provider', () => {
  it('embeds in process with the lexical model (no network)', async () => {
    const provider = createEmbeddingProvider(
      { model: LOCAL_LEXICAL_VECTOR_MODEL, name: 'Local', defaultToken: 512, maxToken: 3000, provider: 'local-lexical' },
      { timeoutMs: 1000, baseUrl: 'http://127.0.0.1:1/unused' },
    );
    expect(provider.model).toBe(LOCAL_LEXICAL_VECTOR_MODEL);
    expect(provider.dimensions).toBe(256);
    const result = await provider.embed(['hello world', '知识库']);
    expect(result.vectors).toEqual([lexicalEmbed('hello world'), lexicalEmbed('知识库')]);
    expect(result.tokens).toBe(5);
  });

  it('uses configured dimensions', async () => {
    const provider = createEmbeddingProvider(
      { model: 'local-small', name: 'Local small', defaultToken: 512, maxToken: 3000, provider: 'local-lexical', dimensions: 64 },
      { timeoutMs: 1000 },
    );
    const { vectors } = await provider.embed(['abc']);
    expect(vectors[0]).toHaveLength(64);
  });
});

describe('OpenAI-compatible embedding provider (local protocol server)', () => {
  let server: FakeModelProvider;
  beforeAll(async () => {
    server = await startFakeModelProvider();
  });
  afterAll(() => server.close());

  it('posts {model, input} with the bearer key and returns normalised vectors in input order', async () => {
    server.handler = (request) => {
      const inputs = (request.body as { input: string[] }).input;
      const answer = openAiEmbeddingAnswer(inputs);
      // Answer out of order: the client must follow `index`.
      (answer.json as { data: unknown[] }).data.reverse();
      return answer;
    };
    const provider = createEmbeddingProvider(remoteModel(), { baseUrl: server.baseUrl, apiKey: 'sk-test', timeoutMs: 2000 });
    const result = await provider.embed(['abc', 'hello']);
    const last = server.requests.at(-1)!;
    expect(last.method).toBe('POST');
    expect(last.path).toBe('/v1/embeddings');
    expect(last.headers.authorization).toBe('Bearer sk-test');
    expect(last.body).toEqual({ model: 'text-embedding-test', input: ['abc', 'hello'] });
    expect(result.tokens).toBe(6);
    const expected = letterVector('abc');
    const scale = norm(expected);
    expect(result.vectors[0]!.map((x) => Number(x.toFixed(6)))).toEqual(expected.map((x) => Number((x / scale).toFixed(6))));
    for (const vector of result.vectors) expect(norm(vector)).toBeCloseTo(1, 6);
  });

  it("merges the model's defaultConfig and, by purpose, its dbConfig or queryConfig into the body", async () => {
    server.handler = (request) => openAiEmbeddingAnswer((request.body as { input: string[] }).input);
    const model = remoteModel({
      defaultConfig: { dimensions: 1024, input_type: 'none' },
      dbConfig: { input_type: 'document' },
      queryConfig: { input_type: 'query', model: 'not-this-one', input: 'nor this' },
    });
    const provider = createEmbeddingProvider(model, { baseUrl: server.baseUrl, timeoutMs: 2000 });
    await provider.embed(['stored'], 'db');
    expect(server.requests.at(-1)!.body).toEqual({ dimensions: 1024, input_type: 'document', model: 'text-embedding-test', input: ['stored'] });
    await provider.embed(['asked'], 'query');
    // The model and the input are ours whatever the configuration says.
    expect(server.requests.at(-1)!.body).toEqual({ dimensions: 1024, input_type: 'query', model: 'text-embedding-test', input: ['asked'] });
    await provider.embed(['plain']);
    expect(server.requests.at(-1)!.body).toEqual({ dimensions: 1024, input_type: 'none', model: 'text-embedding-test', input: ['plain'] });
  });

  it('prefers the model requestUrl/requestAuth and accepts a full endpoint URL', async () => {
    server.handler = (request) => openAiEmbeddingAnswer((request.body as { input: string[] }).input);
    const provider = createEmbeddingProvider(remoteModel({ requestUrl: `${server.baseUrl}/embeddings`, requestAuth: 'model-key' }), {
      baseUrl: 'http://127.0.0.1:1/never',
      apiKey: 'default-key',
      timeoutMs: 2000,
    });
    await provider.embed(['x']);
    expect(server.requests.at(-1)!.path).toBe('/v1/embeddings');
    expect(server.requests.at(-1)!.headers.authorization).toBe('Bearer model-key');
  });

  it.each([
    ['a text total_tokens', { total_tokens: '12', prompt_tokens: 7 }, 7],
    ['a text total_tokens and no prompt_tokens', { total_tokens: '12' }, 'estimate'],
    ['a negative total_tokens', { total_tokens: -3 }, 'estimate'],
    ['a null total_tokens', { total_tokens: null, prompt_tokens: 4 }, 4],
    ['both as numbers', { total_tokens: 9, prompt_tokens: 4 }, 9],
  ])('usage with %s counts as the provider reported only when it is a count', async (_name, usage, expected) => {
    server.handler = (request) => {
      const answer = openAiEmbeddingAnswer((request.body as { input: string[] }).input);
      return { json: { ...(answer.json as object), usage } };
    };
    const provider = createEmbeddingProvider(remoteModel(), { baseUrl: server.baseUrl, timeoutMs: 2000 });
    const { tokens } = await provider.embed(['hello world again']);
    // The local estimate of the text (countTokens): 3.
    expect(tokens).toBe(expected === 'estimate' ? 3 : expected);
  });

  it('splits large inputs into batches and resizes to configured dimensions', async () => {
    server.handler = (request) => openAiEmbeddingAnswer((request.body as { input: string[] }).input, 8);
    const before = server.requests.length;
    const provider = createEmbeddingProvider(remoteModel({ dimensions: 12 }), { baseUrl: server.baseUrl, timeoutMs: 2000 });
    const texts = Array.from({ length: EMBEDDING_BATCH_SIZE + 5 }, (_, i) => `text ${i}`);
    const { vectors, tokens } = await provider.embed(texts);
    expect(server.requests.length - before).toBe(2);
    expect(vectors).toHaveLength(texts.length);
    expect(vectors[0]).toHaveLength(12);
    expect(tokens).toBe(texts.length * 3);
    expect(await provider.embed([])).toEqual({ vectors: [], tokens: 0 });
  });

  it.each([
    ['HTTP 401 with the provider message', { status: 401, json: { error: { message: 'Incorrect API key provided' } } }, 'http', 401, /HTTP 401: Incorrect API key provided/, false],
    ['HTTP 400 invalid request', { status: 400, json: { error: { message: 'input too long', type: 'invalid_request_error' } } }, 'http', 400, /HTTP 400: input too long/, true],
    ['HTTP 500 plain text', { status: 500, text: 'upstream exploded' }, 'http', 500, /HTTP 500: upstream exploded/, false],
    ['HTTP 429', { status: 429, json: { message: 'slow down' } }, 'http', 429, /HTTP 429: slow down/, false],
    ['invalid JSON', { status: 200, text: 'not json' }, 'invalid_response', 200, /invalid JSON/, false],
    ['missing data', { json: { usage: {} } }, 'invalid_response', undefined, /no data list/, false],
    ['wrong count', { json: { data: [{ index: 0, embedding: [1, 2] }] } }, 'invalid_response', undefined, /1 vectors for 2 texts/, false],
    ['non-numeric vector', { json: { data: [{ index: 0, embedding: ['a'] }, { index: 1, embedding: [1] }] } }, 'invalid_response', undefined, /invalid embedding/, false],
  ] as const)('%s becomes a clear ProviderError', async (_name, answer, kind, status, message, invalidRequest) => {
    server.handler = () => answer;
    const provider = createEmbeddingProvider(remoteModel(), { baseUrl: server.baseUrl, apiKey: 'sk-secret-value', timeoutMs: 2000 });
    const error = await errorOf(provider.embed(['a', 'b']));
    expect(error).toBeInstanceOf(ProviderError);
    expect(error!.kind).toBe(kind);
    expect(error!.status).toBe(status);
    expect(error!.message).toMatch(message);
    expect(error!.message).toContain('text-embedding-test');
    expect(error!.message).not.toContain('sk-secret-value');
    expect(error!.isInvalidRequest).toBe(invalidRequest);
  });

  it('times out a provider that does not answer', async () => {
    server.handler = () => ({ delayMs: 1500, json: {} });
    const provider = createEmbeddingProvider(remoteModel(), { baseUrl: server.baseUrl, timeoutMs: 150 });
    const error = await errorOf(provider.embed(['slow']));
    expect(error?.kind).toBe('timeout');
    expect(error?.message).toMatch(/did not answer within 150 ms/);
  });

  it('reports unreachable, unconfigured providers and empty input', async () => {
    const unreachable = createEmbeddingProvider(remoteModel(), { baseUrl: 'http://127.0.0.1:9/v1', timeoutMs: 2000 });
    expect((await errorOf(unreachable.embed(['x'])))?.kind).toBe('network');
    const unconfigured = createEmbeddingProvider(remoteModel(), { timeoutMs: 2000 });
    const error = await errorOf(unconfigured.embed(['x']));
    expect(error?.kind).toBe('not_configured');
    expect(error?.message).toMatch(/requestUrl or OPENAI_BASE_URL/);
    const configured = createEmbeddingProvider(remoteModel(), { baseUrl: server.baseUrl, timeoutMs: 2000 });
    const empty = await errorOf(configured.embed(['ok', '  ']));
    expect(empty?.kind).toBe('invalid_input');
    expect(empty?.isInvalidRequest).toBe(true);
  });
});
