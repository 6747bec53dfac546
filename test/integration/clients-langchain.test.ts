import type { AddressInfo } from 'node:net';
import { HumanMessage, SystemMessage } from '@langchain/core/messages';
import { ChatOpenAI, OpenAIEmbeddings } from '@langchain/openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { createApiKey, createUser, login } from '../helpers/platform.js';
import { createPublishedApp, simpleChatGraph, startChatApp } from './chat-helpers.js';

/**
 * The LangChain JS OpenAI client against the service on a real port, unchanged: an app key
 * for chat (JSON and streaming), a global key for embeddings (batches, base64 by default).
 */
let t: TestApp;
let fake: FakeOpenAi;
let baseURL: string;
let appKey: string;
let globalKey: string;

beforeAll(async () => {
  ({ t, fake } = await startChatApp());
  await createUser(t, { username: 'lc-user', password: 'password-l1' });
  const token = await login(t, 'lc-user', 'password-l1');
  const appId = await createPublishedApp(t, token, 'LangChain bot', simpleChatGraph);
  appKey = await createApiKey(t, token, { name: 'langchain app key', appId });
  globalKey = await createApiKey(t, token, { name: 'langchain global key' });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  baseURL = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}/api/v1`;
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('@langchain/openai against the service', () => {
  const chatModel = (streaming = false) => new ChatOpenAI({ model: 'gpt-4o-mini', apiKey: appKey, configuration: { baseURL }, maxRetries: 0, streaming });

  it('ChatOpenAI.invoke with an app key gets the app answer', async () => {
    const reply = await chatModel().invoke([new SystemMessage('You are terse.'), new HumanMessage('What is the capital of France?')]);
    expect(reply.content).toBe('Echo: What is the capital of France?');
  });

  it('ChatOpenAI.stream yields the answer in chunks', async () => {
    const chunks: string[] = [];
    for await (const chunk of await chatModel(true).stream('Count to three')) chunks.push(String(chunk.content));
    expect(chunks.join('')).toBe('Echo: Count to three');
    expect(chunks.filter(Boolean).length).toBeGreaterThan(1);
  });

  it('OpenAIEmbeddings.embedDocuments on three texts gives three vectors, embedQuery one', async () => {
    const embeddings = new OpenAIEmbeddings({ model: 'text-embedding-3-small', apiKey: globalKey, configuration: { baseURL }, maxRetries: 0 });
    const texts = ['The cat sat on the mat.', 'Quarterly revenue grew by ten percent.', 'Reset your password from the settings page.'];
    const vectors = await embeddings.embedDocuments(texts);
    expect(vectors).toHaveLength(3);
    for (const vector of vectors) {
      expect(vector).toHaveLength(1536);
      expect(vector.every((value) => Number.isFinite(value))).toBe(true);
    }
    expect(new Set(vectors.map((vector) => JSON.stringify(vector))).size).toBe(3);
    const query = await embeddings.embedQuery(texts[1]!);
    query.forEach((value, i) => {
      expect(value).toBeCloseTo(vectors[1]![i]!, 6);
    });
  });
});
