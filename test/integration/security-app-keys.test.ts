import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { apiKeyHeaders, createApiKey, createUser, login } from '../helpers/platform.js';
import { call, ok } from './apps-helpers.js';
import { createPublishedApp, simpleChatGraph, startChatApp } from './chat-helpers.js';

/**
 * Attacks on API keys from the security review: the legacy `fastgpt-<key>-<appId>` form must be
 * authorised like a body appId, and an app-bound key acts only on its own app's chat routes.
 */
let t: TestApp;
let fake: FakeOpenAi;
let ownerToken: string;
let memberToken: string;
let privateAppId: string;
let otherAppId: string;
let datasetId: string;

const completions = (headers: Record<string, string>, payload: Record<string, unknown>) =>
  t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers, payload });

beforeAll(async () => {
  ({ t, fake } = await startChatApp());
  const owner = await createUser(t, { username: 'keys-owner', password: 'password-1' });
  await createUser(t, { username: 'keys-reader', password: 'password-1', teamId: owner.teamId, role: 'member', permission: 6 });
  ownerToken = await login(t, 'keys-owner', 'password-1');
  memberToken = await login(t, 'keys-reader', 'password-1');
  // Apps of the owner are private: the member (team write, so it may create keys) has no permission on the private one.
  privateAppId = await createPublishedApp(t, ownerToken, 'Private bot', simpleChatGraph);
  otherAppId = await createPublishedApp(t, ownerToken, 'Other bot', simpleChatGraph);
  await ok(t, ownerToken, 'POST', '/core/app/update', { appId: privateAppId, defaultPermission: 0 });
  datasetId = await ok(t, ownerToken, 'POST', '/core/dataset/create', { name: 'Owner notes' });
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('the legacy key form fastgpt-<key>-<appId>', () => {
  it('is refused for an app the key owner cannot read, with and without detail', async () => {
    expect((await call(t, memberToken, 'GET', '/core/app/detail', { appId: privateAppId })).status).toBe(403);
    const memberKey = await createApiKey(t, memberToken, { name: 'member global' });
    const before = await t.app.mongo.db.collection('chats').countDocuments();
    for (const detail of [false, true]) {
      const res = await completions(apiKeyHeaders(`${memberKey}-${privateAppId}`), { detail, chatId: `legacy-${detail}`, messages: [{ role: 'user', content: 'hi' }] });
      expect(res.statusCode, res.body).toBe(403);
      expect(res.json()).toMatchObject({ statusText: 'unAuthApp', data: null });
      expect(res.body).not.toContain('responseData');
    }
    expect(await t.app.mongo.db.collection('chats').countDocuments()).toBe(before);
  });

  it('still reaches an app the key owner can read', async () => {
    const ownerKey = await createApiKey(t, ownerToken, { name: 'owner global' });
    const res = await completions(apiKeyHeaders(`${ownerKey}-${privateAppId}`), { messages: [{ role: 'user', content: 'legacy ok' }] });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().choices[0].message.content).toBe('Echo: legacy ok');
  });
});

describe('an app-bound key', () => {
  let boundKey: string;
  beforeAll(async () => {
    boundKey = await createApiKey(t, ownerToken, { name: 'bound', appId: privateAppId });
    await completions(apiKeyHeaders(boundKey), { chatId: 'own-chat', messages: [{ role: 'user', content: 'mine' }] });
    // Made with a global key of the same member, so it has the same tmbId and source 'api'.
    const globalKey = await createApiKey(t, ownerToken, { name: 'global for the other app' });
    await completions(apiKeyHeaders(globalKey), { appId: otherAppId, chatId: 'other-chat', messages: [{ role: 'user', content: 'theirs' }] });
  });

  const asKey = (method: 'GET' | 'POST', url: string, payload: Record<string, unknown>) =>
    t.app.inject({ method, url: `/api${url}`, headers: apiKeyHeaders(boundKey), ...(method === 'GET' ? { query: payload as Record<string, string> } : { payload }) });

  it('works on its own app chat routes', async () => {
    const histories = await asKey('POST', '/core/chat/getHistories', { appId: privateAppId });
    expect(histories.statusCode, histories.body).toBe(200);
    expect(histories.json().data.map((h: { chatId: string }) => h.chatId)).toEqual(['own-chat']);
  });

  it("cannot list or clear another app's histories", async () => {
    expect(await t.app.mongo.db.collection('chats').countDocuments({ chatId: 'other-chat' })).toBe(1);
    const list = await asKey('POST', '/core/chat/getHistories', { appId: otherAppId });
    expect(list.statusCode, list.body).toBe(403);
    expect(list.body).not.toContain('other-chat');
    const clear = await asKey('POST', '/core/chat/clearHistories', { appId: otherAppId });
    expect(clear.statusCode, clear.body).toBe(403);
    expect(await t.app.mongo.db.collection('chats').countDocuments({ chatId: 'own-chat' })).toBe(1);
    expect(await t.app.mongo.db.collection('chats').countDocuments({ chatId: 'other-chat' })).toBe(1);
  });

  it('is refused by every route that is not a chat route of its app, naming the rule', async () => {
    const refused: [('GET' | 'POST'), string, Record<string, unknown>][] = [
      ['POST', '/core/dataset/list', {}],
      ['GET', '/core/dataset/detail', { id: datasetId }],
      ['POST', '/core/dataset/searchTest', { datasetId, text: 'notes' }],
      ['POST', '/core/dataset/collection/list', { datasetId }],
      ['POST', '/v1/embeddings', { input: 'hello' }],
    ];
    for (const [method, url, payload] of refused) {
      const res = await asKey(method, url, payload);
      expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(403);
      expect(res.json().message).toMatch(/bound to app .* chat routes/);
    }
  });

  it('a global key of the same member still reads datasets', async () => {
    const globalKey = await createApiKey(t, ownerToken, { name: 'global for datasets' });
    const res = await t.app.inject({ method: 'POST', url: '/api/core/dataset/list', headers: apiKeyHeaders(globalKey), payload: {} });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data.map((d: { _id: string }) => d._id)).toContain(datasetId);
  });
});
