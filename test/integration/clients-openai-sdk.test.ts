import type { AddressInfo } from 'node:net';
import OpenAI, { AuthenticationError, BadRequestError, toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { createApiKey, createUser, login } from '../helpers/platform.js';
import { createPublishedApp, startChatApp } from './chat-helpers.js';

/**
 * The official OpenAI Node SDK against the service on a real port, unchanged: embeddings with
 * `dimensions` (base64 by default, float on request) and transcriptions with the SDK's whole
 * form. Transcriptions take no API key (as the reference), so the SDK there carries a session.
 */
let t: TestApp;
let fake: FakeOpenAi;
let baseURL: string;
let session: string;
let globalKey: string;

beforeAll(async () => {
  ({ t, fake } = await startChatApp());
  await createUser(t, { username: 'sdk-user', password: 'password-s1' });
  session = await login(t, 'sdk-user', 'password-s1');
  globalKey = await createApiKey(t, session, { name: 'sdk global key' });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  baseURL = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}/api/v1`;
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('openai SDK: embeddings', () => {
  it('embeddings.create with dimensions gets vectors of that size, of unit length, in both encodings', async () => {
    const client = new OpenAI({ apiKey: globalKey, baseURL, maxRetries: 0 });
    const input = ['Reset your password from the settings page.', 'Quarterly revenue grew by ten percent.'];
    const base64 = await client.embeddings.create({ model: 'text-embedding-3-small', input, dimensions: 64 });
    const floats = await client.embeddings.create({ model: 'text-embedding-3-small', input, dimensions: 64, encoding_format: 'float' });
    for (const answer of [base64, floats]) {
      expect(answer.data).toHaveLength(2);
      for (const { embedding } of answer.data) {
        expect(embedding).toHaveLength(64);
        expect(Math.hypot(...embedding)).toBeCloseTo(1, 5);
      }
    }
    base64.data[0]!.embedding.forEach((value, i) => {
      expect(value).toBeCloseTo(floats.data[0]!.embedding[i]!, 6);
    });
  });
});

describe('openai SDK: audio transcriptions', () => {
  const file = () => toFile(Buffer.alloc(1024, 7), 'recording.mp3', { type: 'audio/mpeg' });
  const form = async () => ({
    file: await file(),
    model: 'whisper-1',
    language: 'en',
    prompt: 'A support call about a refund.',
    response_format: 'verbose_json' as const,
    temperature: 0,
    timestamp_granularities: ['word' as const, 'segment' as const],
  });

  it("audio.transcriptions.create with the SDK's full form answers .text", async () => {
    const client = new OpenAI({ apiKey: 'not-a-key', baseURL, maxRetries: 0, defaultHeaders: { token: session } });
    const transcription = await client.audio.transcriptions.create(await form());
    expect(transcription.text).toBe('transcribed words');
  });

  // OpenAI's own speech-to-text example asks for text; the SDK then types the answer as a string.
  it("response_format text answers the bare transcript; subtitles are a 400 naming the field", async () => {
    const client = new OpenAI({ apiKey: 'not-a-key', baseURL, maxRetries: 0, defaultHeaders: { token: session } });
    const text = await client.audio.transcriptions.create({ ...(await form()), response_format: 'text', timestamp_granularities: undefined });
    expect(text).toBe('transcribed words');
    const error = await client.audio.transcriptions.create({ ...(await form()), response_format: 'srt', timestamp_granularities: undefined }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as BadRequestError).message).toContain('response_format');
  });

  it('an API key alone is refused with 401', async () => {
    const client = new OpenAI({ apiKey: globalKey, baseURL, maxRetries: 0 });
    const error = await client.audio.transcriptions.create(await form()).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(AuthenticationError);
    expect((error as AuthenticationError).status).toBe(401);
  });
});

describe('openai SDK: chat completion streams', () => {
  // A workflow may answer no text (it only calls a hook, or stops at a user select without
  // detail): OpenAI names the role in a stream's first chunk, and the SDK's stream helper (behind
  // runTools too) refuses a stream that never did.
  it('the stream helper finalises an answer without text as an assistant message', async () => {
    const silent = {
      nodes: [{ nodeId: 'start', flowNodeType: 'workflowStart', name: 'Start', inputs: [], outputs: [{ id: 'userChatInput', key: 'userChatInput', valueType: 'string' }] }],
      edges: [],
      chatConfig: {},
    };
    const appKey = await createApiKey(t, session, { name: 'silent app key', appId: await createPublishedApp(t, session, 'Silent bot', silent) });
    const client = new OpenAI({ apiKey: appKey, baseURL, maxRetries: 0 });
    const final = await client.chat.completions.stream({ model: 'x', messages: [{ role: 'user', content: 'log this' }] }).finalChatCompletion();
    // The SDK makes no text a null content, as it does for OpenAI's own empty answers.
    expect(final.choices[0]!.message).toMatchObject({ role: 'assistant', content: null });
    expect(final.choices[0]!.finish_reason).toBe('stop');
  });
});
