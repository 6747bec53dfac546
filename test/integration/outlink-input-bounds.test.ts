/**
 * Share-link settings the service later acts on are checked when they are written (a bad hook
 * URL would otherwise refuse every visitor), and a link's id, a credential, is never echoed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { createUser, login } from '../helpers/platform.js';
import { call, ok } from './apps-helpers.js';
import { createPublishedApp, simpleChatGraph, startChatApp } from './chat-helpers.js';

let t: TestApp;
let fake: FakeOpenAi;
let tok: string;
let appId: string;

beforeAll(async () => {
  ({ t, fake } = await startChatApp());
  await createUser(t, { username: 'bounds', password: 'password-bd1' });
  tok = await login(t, 'bounds', 'password-bd1');
  appId = await createPublishedApp(t, tok, 'Bot', simpleChatGraph);
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

const links = () => t.app.mongo.db.collection('outlinks');

describe('share-link URLs and channel fields', () => {
  it.each([
    ['limit.hookUrl', 'file:///etc/passwd', { limit: { hookUrl: 'file:///etc/passwd' } }],
    ['limit.hookUrl', 'javascript:', { limit: { hookUrl: 'javascript:alert(1)' } }],
    ['limit.hookUrl', 'ftp:', { limit: { hookUrl: 'ftp://example.com/hook' } }],
    ['limit.hookUrl', 'an unparseable http URL', { limit: { hookUrl: 'http://exa[mple/hook' } }],
    ['app.apiBaseUrl', 'file:', { type: 'wecom', app: { apiBaseUrl: 'file:///etc/passwd' } }],
    ['app.apiBaseUrl', 'gopher:', { type: 'feishu', app: { apiBaseUrl: 'gopher://example.com' } }],
    ['app.AgentId', '100 KB of text', { type: 'wecom', app: { AgentId: 'x'.repeat(100_000) } }],
    ['app.AgentId', 'a fraction', { type: 'wecom', app: { AgentId: 1.5 } }],
  ])('create refuses %s of %s with a 400 naming it, and stores nothing', async (field, _what, extra) => {
    const before = await links().countDocuments();
    const res = await call(t, tok, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'bad', ...extra });
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.message).toContain(field);
    expect(await links().countDocuments()).toBe(before);
  });

  it('update refuses them too and keeps the stored values; http(s) URLs and a numeric AgentId are accepted', async () => {
    const shareId = await ok(t, tok, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'ok', limit: { hookUrl: 'https://hooks.example.com/auth' } });
    const channel = await ok(t, tok, 'POST', '/support/outLink/create', { appId, type: 'wecom', name: 'wecom', app: { AgentId: 1000002, apiBaseUrl: 'http://127.0.0.1:9/wecom' } });
    const link = await links().findOne({ shareId });
    const hook = await call(t, tok, 'POST', '/support/outLink/update', { _id: String(link?._id), limit: { hookUrl: 'javascript:alert(1)' } });
    expect(hook.status).toBe(400);
    expect(hook.body.message).toContain('limit.hookUrl');
    expect((await links().findOne({ shareId }))?.limit.hookUrl).toBe('https://hooks.example.com/auth');
    const channelId = String((await links().findOne({ shareId: channel }))?._id);
    const base = await call(t, tok, 'POST', '/support/outLink/update', { _id: channelId, app: { apiBaseUrl: 'file:///etc/passwd' } });
    expect(base.status).toBe(400);
    expect(base.body.message).toContain('app.apiBaseUrl');
    expect((await links().findOne({ shareId: channel }))?.app).toMatchObject({ AgentId: 1000002, apiBaseUrl: 'http://127.0.0.1:9/wecom' });
  });
});

describe('a share id is never echoed', () => {
  it('a messaging channel token posted as shareId: 403 without the token, in the answer or the log', async () => {
    const channelToken = await ok(t, tok, 'POST', '/support/outLink/create', { appId, type: 'feishu', name: 'Feishu', app: { appId: 'cli_1', appSecret: 's', verificationToken: 'vt' } });
    const res = await t.app.inject({ method: 'POST', url: '/api/core/chat/outLink/init', payload: { shareId: channelToken, outLinkUid: 'visitor' } });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ statusText: 'linkUnInvalid', message: 'The share link is invalid' });
    const unknown = await t.app.inject({ method: 'POST', url: '/api/support/outLink/feishu/unknownchanneltoken123', headers: { 'content-type': 'application/json' }, payload: { type: 'url_verification', token: 'vt', challenge: 'c' } });
    expect(unknown.statusCode).toBe(403);
    expect(unknown.body).not.toContain('unknownchanneltoken123');
    for (const secret of [channelToken, 'unknownchanneltoken123']) expect(t.logs().split('\n').filter((line) => line.includes(secret))).toEqual([]);
  });
});
