import type { AddressInfo } from 'node:net';
import { ChatOpenAI } from '@langchain/openai';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { apiKeyHeaders, authHeaders, createApiKey, createUser, login } from '../helpers/platform.js';
import { createPublishedApp, simpleChatGraph, sseFrames, startChatApp } from './chat-helpers.js';

/**
 * The official openai SDK (and LangChain over it) on a real port, where they fail: a refused
 * call and a completion failing while it streams raise errors carrying our message, and the
 * answers carry the fields strictly typed clients require (object, created).
 */
let t: TestApp;
let fake: FakeOpenAi;
let baseURL: string;
let appKey: string;
let token: string;
let appId: string;

const BAD_KEY = 'fastgpt-this-key-does-not-exist';
const question = [{ role: 'user' as const, content: 'hello' }];
const sdk = (apiKey: string) => new OpenAI({ apiKey, baseURL, maxRetries: 0 });

/** What the provider streams before its connection breaks. */
function failMidStream() {
  fake.route('POST', '/v1/chat/completions', () => ({
    stream: async (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ choices: [{ delta: { content: 'Half an ans' } }] })}\n\n`);
      await new Promise((resolve) => setTimeout(resolve, 20));
      res.destroy();
    },
  }));
}

beforeAll(async () => {
  ({ t, fake } = await startChatApp());
  await createUser(t, { username: 'sdk-errors', password: 'password-e1' });
  token = await login(t, 'sdk-errors', 'password-e1');
  appId = await createPublishedApp(t, token, 'Errors bot', simpleChatGraph);
  appKey = await createApiKey(t, token, { name: 'errors app key', appId });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  baseURL = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}/api/v1`;
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('refusals on the OpenAI-style routes', () => {
  it('a bad key: the SDK error shows our message, type and code, on each of the three routes', async () => {
    const client = sdk(BAD_KEY);
    const audio = () => {
      const form = new FormData();
      form.append('file', new Blob([Buffer.from('ID3-fake-mp3')]), 'recording.mp3');
      form.append('model', 'whisper-1');
      return form;
    };
    const cases = [
      { call: () => client.chat.completions.create({ model: 'gpt-4o-mini', messages: question }), path: 'chat/completions', body: JSON.stringify({ model: 'gpt-4o-mini', messages: question }) },
      { call: () => client.embeddings.create({ model: 'text-embedding-3-small', input: 'hello' }), path: 'embeddings', body: JSON.stringify({ model: 'text-embedding-3-small', input: 'hello' }) },
      { call: async () => client.audio.transcriptions.create({ model: 'whisper-1', file: await toFile(Buffer.from('ID3-fake-mp3'), 'recording.mp3') }), path: 'audio/transcriptions', body: audio() },
    ];
    for (const { call, path, body } of cases) {
      const error = await call().then(
        () => undefined,
        (thrown: unknown) => thrown as InstanceType<typeof OpenAI.AuthenticationError>,
      );
      // What the route answers a client that reads the envelope.
      const headers = { authorization: `Bearer ${BAD_KEY}`, ...(typeof body === 'string' ? { 'content-type': 'application/json' } : {}) };
      const envelope = (await (await fetch(`${baseURL}/${path}`, { method: 'POST', headers, body })).json()) as { message: string; statusText: string };
      expect(error, path).toBeInstanceOf(OpenAI.AuthenticationError);
      expect(error!.status).toBe(401);
      expect(error!.message, path).toBe(`401 ${envelope.message}`);
      expect(error!.type).toBe('authentication_error');
      expect(error!.code).toBe(envelope.statusText);
    }
  });

  it('the body keeps the envelope beside `error`; routes that are not OpenAI-style do not get it', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: apiKeyHeaders(BAD_KEY), payload: { messages: question } });
    expect(res.statusCode).toBe(401);
    const body = res.json();
    expect(body).toEqual({ code: body.code, statusText: body.statusText, message: body.message, data: null, error: { message: body.message, type: 'authentication_error', code: body.statusText } });
    expect(body.message).toEqual(expect.any(String));

    const invalid = await t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: apiKeyHeaders(appKey), payload: { messages: question, detail: 'sometimes' } });
    expect(invalid.statusCode).toBe(400);
    expect(invalid.json().error).toEqual({ message: invalid.json().message, type: 'invalid_request_error', code: 'missingParams' });

    const platform = await t.app.inject({ method: 'GET', url: '/api/core/app/list', headers: apiKeyHeaders(BAD_KEY) });
    expect(platform.statusCode).toBe(401);
    expect(platform.json()).not.toHaveProperty('error');
  });
});

describe('a completion failing while it streams', () => {
  /** Iterates an SDK stream to its end: the text that arrived and what was thrown. */
  async function drain(stream: AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>) {
    const parts: string[] = [];
    try {
      for await (const chunk of stream) parts.push(chunk.choices[0]?.delta.content ?? '');
    } catch (error) {
      return { text: parts.join(''), error: error as InstanceType<typeof OpenAI.APIError> };
    }
    return { text: parts.join(''), error: undefined };
  }
  const streamed = () => sdk(appKey).chat.completions.create({ model: 'gpt-4o-mini', messages: question, stream: true });

  it('a provider refusing once the stream has started: the SDK iteration throws our message, type and code', async () => {
    fake.route('POST', '/v1/chat/completions', () => ({ status: 500, json: { error: 'overloaded' } }));
    try {
      const { error } = await drain(await streamed());
      expect(error).toBeInstanceOf(OpenAI.APIError);
      expect(error!.message).toMatch(/^The model provider answered HTTP 500.*overloaded/);
      expect(error!.type).toBe('server_error');
      expect(error!.code).toBe('badGateway');
      // The frame as sent: OpenAI's `error` beside the fields FastGPT's web client reads.
      const raw = await t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: apiKeyHeaders(appKey), payload: { messages: question, stream: true } });
      const frame = JSON.parse(sseFrames(raw.body).find((f) => f.event === 'error')!.data);
      expect(frame).toEqual({ code: 502, statusText: 'badGateway', message: error!.message, data: null, error: { message: error!.message, type: 'server_error', code: 'badGateway' } });
      // The editor's debug chat writes the same frame.
      const payload = { appId, nodes: simpleChatGraph.nodes, edges: simpleChatGraph.edges, messages: question };
      const test = await t.app.inject({ method: 'POST', url: '/api/core/chat/chatTest', headers: authHeaders(token), payload });
      expect(JSON.parse(sseFrames(test.body).find((f) => f.event === 'error')!.data)).toEqual(frame);
    } finally {
      fake.unroute('POST', '/v1/chat/completions');
    }
  });

  it('a provider breaking off after part of the answer: the SDK yields that part, then throws our message', async () => {
    failMidStream();
    try {
      const { text, error } = await drain(await streamed());
      expect(text).toBe('Half an ans');
      expect(error).toBeInstanceOf(OpenAI.APIError);
      const raw = await t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: apiKeyHeaders(appKey), payload: { messages: question, stream: true } });
      const frame = JSON.parse(sseFrames(raw.body).find((f) => f.event === 'error')!.data);
      expect(error!.message).toBe(frame.message);
      // The provider's failure, not the caller's: a reset provider socket is no aborted upload.
      expect(frame).toMatchObject({ code: 502, statusText: 'badGateway', error: { type: 'server_error' } });
      expect(frame.message).toMatch(/broke off its answer/);
    } finally {
      fake.unroute('POST', '/v1/chat/completions');
    }
  });

  it('makes LangChain ChatOpenAI.stream reject instead of yielding an empty answer', async () => {
    failMidStream();
    try {
      const model = new ChatOpenAI({ model: 'gpt-4o-mini', apiKey: appKey, configuration: { baseURL }, maxRetries: 0, streaming: true });
      const consume = async () => {
        for await (const _chunk of await model.stream('hello'));
      };
      await expect(consume()).rejects.toThrow();
    } finally {
      fake.unroute('POST', '/v1/chat/completions');
    }
  });
});

describe('fields strictly typed clients require', () => {
  it('a JSON answer is a chat.completion with created; stream chunks are chat.completion.chunk with created', async () => {
    const before = Math.floor(Date.now() / 1000);
    const answer = await sdk(appKey).chat.completions.create({ model: 'gpt-4o-mini', messages: question });
    const after = Math.ceil(Date.now() / 1000);
    expect(answer.object).toBe('chat.completion');
    expect(answer.created).toBeGreaterThanOrEqual(before);
    expect(answer.created).toBeLessThanOrEqual(after);
    expect(answer.choices[0]!.message.content).toBe('Echo: hello');

    const stream = await sdk(appKey).chat.completions.create({ model: 'gpt-4o-mini', messages: question, stream: true });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks) {
      expect(chunk.object).toBe('chat.completion.chunk');
      expect(chunk.created).toBeGreaterThanOrEqual(before);
    }
    expect(new Set(chunks.map((chunk) => chunk.created)).size).toBe(1);
  });
});

describe('retries, stream ids and lenient fields, as the openai SDK meets them', () => {
  const completionCalls = () => fake.requests.filter((request) => request.path === '/v1/chat/completions').length;
  /** The provider answers `status` (with `headers`) to every chat call while `run` runs. */
  async function whileProviderAnswers<T>(status: number, headers: Record<string, string>, run: () => Promise<T>): Promise<T> {
    fake.route('POST', '/v1/chat/completions', () => ({
      stream: async (res) => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify({ error: { message: `provider says ${status}` } }));
      },
    }));
    try {
      return await run();
    } finally {
      fake.unroute('POST', '/v1/chat/completions');
    }
  }
  const inject = () => t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: apiKeyHeaders(appKey), payload: { messages: question } });

  it('a provider refusing the request itself: a 502 the SDK does not send again (x-should-retry: false), so the workflow runs once', async () => {
    await whileProviderAnswers(401, {}, async () => {
      const before = completionCalls();
      // The SDK's defaults: two retries of a 502 unless told not to.
      const error = await new OpenAI({ apiKey: appKey, baseURL }).chat.completions.create({ model: 'gpt-4o-mini', messages: question }).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(OpenAI.APIError);
      expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
      expect(completionCalls() - before).toBe(1);
      expect((await inject()).headers['x-should-retry']).toBe('false');
    });
  });

  it("a provider's rate limit or outage stays worth a retry: no x-should-retry, and its Retry-After passed on", async () => {
    const limited = await whileProviderAnswers(429, { 'retry-after': '3' }, inject);
    expect(limited.statusCode).toBe(502);
    expect(limited.headers['x-should-retry']).toBeUndefined();
    expect(limited.headers['retry-after']).toBe('3');
    const down = await whileProviderAnswers(500, {}, inject);
    expect(down.statusCode).toBe(502);
    expect(down.headers['x-should-retry']).toBeUndefined();
  });

  it("openai v6's stream helper assembles the answer with the usage chunk", async () => {
    const stream = sdk(appKey).chat.completions.stream({ model: 'gpt-4o-mini', messages: question, stream_options: { include_usage: true } });
    const final = await stream.finalChatCompletion();
    expect(final.choices[0]?.message.content).toBe('Echo: hello');
    expect(final.usage).toMatchObject({ prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 });
    expect(final.id).toMatch(/^chatcmpl-/);
  });

  it('an empty appId beside an app key is no error: the key names its app', async () => {
    const answer = await sdk(appKey).chat.completions.create({ model: 'gpt-4o-mini', messages: question, appId: '' } as never);
    expect(answer.choices[0]?.message.content).toBe('Echo: hello');
  });

  it('a Bearer value of no key shape is an invalid key, not a malformed header', async () => {
    for (const apiKey of ['nope', 'fastgpt-abc-def-ghi']) {
      const error = await sdk(apiKey).chat.completions.create({ model: 'gpt-4o-mini', messages: question }).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
      expect((error as Error).message).toMatch(/The API key is not valid/);
    }
  });
});
