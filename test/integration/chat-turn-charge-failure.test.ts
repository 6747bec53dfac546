import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { apiKeyHeaders, createApiKey, createUser, login } from '../helpers/platform.js';
import { createPublishedApp, simpleChatGraph, sseFrames, startChatApp } from './chat-helpers.js';

/**
 * A turn's charge to its API key comes after the turn was answered and saved. Its failure was the
 * turn's: a 500 (or an error frame after the whole streamed answer), which a client sends again,
 * storing the turn twice and paying the model twice. The same held for every model call outside a
 * turn (question guide, embeddings, transcription, searchTest): usage recorded, then a 5xx that
 * OpenAI's SDKs retry, each attempt calling the model and recording its usage again.
 */
let t: TestApp;
let fake: FakeOpenAi;
let token: string;
beforeAll(async () => {
  ({ t, fake } = await startChatApp());
  await createUser(t, { username: 'charge-fail', password: 'password-cf1' });
  token = await login(t, 'charge-fail', 'password-cf1');
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

/** The key's next charge fails as a database outage would. */
function failNextCharge(): void {
  const keys = t.app.identity.apiKeys;
  const original = keys.addUsagePoints;
  keys.addUsagePoints = async () => {
    keys.addUsagePoints = original;
    throw Object.assign(new Error('connection reset'), { name: 'MongoNetworkError' });
  };
}

describe('a chat turn whose charge fails', () => {
  it('is answered, JSON or streamed, and saved once', async () => {
    const appId = await createPublishedApp(t, token, 'Charged bot', simpleChatGraph);
    const key = await createApiKey(t, token, { name: 'app key', appId });
    const items = (chatId: string) => t.app.mongo.db.collection('chatitems').countDocuments({ appId: new ObjectId(appId), chatId });

    failNextCharge();
    const json = await t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: apiKeyHeaders(key), payload: { chatId: 'c1', messages: [{ role: 'user', content: 'hello' }] } });
    expect(json.statusCode, json.body).toBe(200);
    expect(json.json().choices[0].message.content).toBe('Echo: hello');
    expect(await items('c1')).toBe(2);

    failNextCharge();
    const stream = await t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: apiKeyHeaders(key), payload: { chatId: 'c2', stream: true, messages: [{ role: 'user', content: 'hi' }] } });
    const frames = sseFrames(stream.body);
    expect(frames.some((frame) => frame.event === 'error')).toBe(false);
    expect(frames.at(-1)?.data).toBe('[DONE]');
    expect(await items('c2')).toBe(2);
  });
});

describe('a model call outside a turn whose charge fails', () => {
  it('is answered once, its usage recorded once', async () => {
    const key = await createApiKey(t, token, { name: 'guide key' });
    const usages = t.app.mongo.db.collection('usages');
    const guideUsages = () => usages.countDocuments({ appName: 'Question guide' });
    const before = await guideUsages();
    failNextCharge();
    const guide = await t.app.inject({
      method: 'POST',
      url: '/api/core/ai/agent/createQuestionGuide',
      headers: apiKeyHeaders(key),
      payload: { messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }] },
    });
    expect(guide.statusCode, guide.body).toBe(200);
    expect(Array.isArray(guide.json().data)).toBe(true);
    await t.app.identity.usage.drain();
    expect(await guideUsages()).toBe(before + 1);
  });
});
