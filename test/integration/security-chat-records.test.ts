import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { apiKeyHeaders, authHeaders, createApiKey, createUser, login } from '../helpers/platform.js';
import { ok } from './apps-helpers.js';
import { createPublishedApp, simpleChatGraph, startChatApp } from './chat-helpers.js';

/**
 * Chat records under attack: a key bound to one app touches no other app's records, and
 * deleting chats never reaches another team's files or items (chat ids are chosen by clients,
 * so teams share them).
 */
let t: TestApp;
let fake: FakeOpenAi;
let ownerToken: string;
let keyAppId: string;
let otherAppId: string;
let boundKey: string;

const db = () => t.app.mongo.db;

const completions = (headers: Record<string, string>, payload: Record<string, unknown>) => t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers, payload });

/** Everything stored for one app's chats, to compare before and after an attempt. */
async function recordsOf(appId: string) {
  const { ObjectId } = await import('mongodb');
  const filter = { appId: new ObjectId(appId) };
  const chats = await db().collection('chats').find(filter).sort({ chatId: 1 }).toArray();
  const items = await db().collection('chatitems').find(filter).sort({ _id: 1 }).toArray();
  return JSON.stringify({ chats, items });
}

function chatFileForm(chatId: string, appId?: string) {
  const boundary = '----chat-file-boundary';
  const metadata = JSON.stringify({ chatId, ...(appId ? { appId } : {}) });
  const body = [
    `--${boundary}\r\nContent-Disposition: form-data; name="bucketName"\r\n\r\nchat\r\n`,
    `--${boundary}\r\nContent-Disposition: form-data; name="metadata"\r\n\r\n${metadata}\r\n`,
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="notes.txt"\r\nContent-Type: text/plain\r\n\r\nfile of ${chatId}\r\n`,
    `--${boundary}--\r\n`,
  ].join('');
  return { payload: body, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

/** Uploads a file into the chat bucket as the web client does; returns its id. */
async function uploadChatFile(token: string, chatId: string, appId?: string): Promise<string> {
  const form = chatFileForm(chatId, appId);
  const res = await t.app.inject({ method: 'POST', url: '/api/common/file/upload', headers: { ...authHeaders(token), ...form.headers }, payload: form.payload });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data.fileId as string;
}

async function chatFileExists(fileId: string): Promise<boolean> {
  const { ObjectId } = await import('mongodb');
  return (await db().collection('chat.files').countDocuments({ _id: new ObjectId(fileId) })) === 1;
}

beforeAll(async () => {
  ({ t, fake } = await startChatApp());
  await createUser(t, { username: 'rec-owner', password: 'password-r1' });
  ownerToken = await login(t, 'rec-owner', 'password-r1');
  keyAppId = await createPublishedApp(t, ownerToken, 'Key app', simpleChatGraph);
  otherAppId = await createPublishedApp(t, ownerToken, 'Other app', simpleChatGraph);
  boundKey = await createApiKey(t, ownerToken, { name: 'bound', appId: keyAppId });
  // The other app's records, made by the same member (so only the key's binding stands between).
  const globalKey = await createApiKey(t, ownerToken, { name: 'global' });
  for (const [headers, appId, chatId] of [
    [apiKeyHeaders(globalKey), otherAppId, 'other-api'],
    [authHeaders(ownerToken), otherAppId, 'other-online'],
    [apiKeyHeaders(boundKey), keyAppId, 'own-api'],
  ] as const) {
    const res = await completions(headers, { appId, chatId, responseChatItemId: `${chatId}-answer`, detail: true, messages: [{ role: 'user', content: 'secret plan', dataId: `${chatId}-question` }] });
    expect(res.statusCode, res.body).toBe(200);
  }
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe("an app-bound key and another app's records", () => {
  const asKey = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, params: Record<string, unknown>) =>
    t.app.inject({
      method,
      url: `/api${url}`,
      headers: apiKeyHeaders(boundKey),
      ...(method === 'GET' || method === 'DELETE' ? { query: Object.fromEntries(Object.entries(params).map(([k, v]) => [k, String(v)])) } : { payload: params }),
    });

  // Every route a bound key may call, as the web client and the documented API send them.
  const attempts = (appId: string, chatId: string): [('GET' | 'POST' | 'PUT' | 'DELETE'), string, Record<string, unknown>][] => [
    ['GET', '/core/chat/init', { appId, chatId }],
    ['POST', '/core/chat/getHistories', { appId }],
    ['PUT', '/core/chat/updateHistory', { appId, chatId, customTitle: 'taken', top: true }],
    ['GET', '/core/chat/getResData', { appId, chatId, dataId: `${chatId}-answer` }],
    ['POST', '/core/chat/feedback/updateUserFeedback', { appId, chatId, chatItemId: `${chatId}-answer`, userBadFeedback: 'bad' }],
    ['DELETE', '/core/chat/item/delete', { appId, chatId, contentId: `${chatId}-question` }],
    ['DELETE', '/core/chat/delHistory', { appId, chatId }],
    ['DELETE', '/core/chat/clearHistories', { appId }],
    // Incomplete calls the reference answers with an empty success are refused too.
    ['GET', '/core/chat/getResData', { appId, chatId }],
    ['DELETE', '/core/chat/item/delete', { appId, chatId }],
  ];

  it('is refused 403 unAuthApp on every record route, and nothing changes', async () => {
    for (const chatId of ['other-api', 'other-online']) {
      for (const [method, url, params] of attempts(otherAppId, chatId)) {
        const before = await recordsOf(otherAppId);
        const res = await asKey(method, url, params);
        expect(res.statusCode, `${method} ${url} ${chatId}: ${res.body}`).toBe(403);
        expect(res.json().statusText, `${method} ${url}`).toBe('unAuthApp');
        expect(res.body).not.toContain('secret plan');
        expect(res.body).not.toContain('Echo');
        expect(await recordsOf(otherAppId), `${method} ${url} changed records`).toBe(before);
      }
    }
  });

  it('works on its own app', async () => {
    for (const [method, url, params] of attempts(keyAppId, 'own-api').slice(0, 5)) {
      const res = await asKey(method, url, params);
      expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(200);
    }
    const resData = await asKey('GET', '/core/chat/getResData', { appId: keyAppId, chatId: 'own-api', dataId: 'own-api-answer' });
    expect(resData.json().data.map((r: { moduleType: string }) => r.moduleType)).toEqual(['workflowStart', 'chatNode']);
  });
});

describe('deleting chats stays inside the team', () => {
  let otherTeamToken: string;
  let otherTeamAppId: string;

  beforeAll(async () => {
    await createUser(t, { username: 'rec-neighbour', password: 'password-r2' });
    otherTeamToken = await login(t, 'rec-neighbour', 'password-r2');
    otherTeamAppId = await createPublishedApp(t, otherTeamToken, 'Neighbour app', simpleChatGraph);
  });

  /** Both teams chat under the same chat id and upload a file into it. */
  async function sharedChat(chatId: string) {
    for (const [token, appId] of [
      [ownerToken, keyAppId],
      [otherTeamToken, otherTeamAppId],
    ] as const) {
      const res = await completions(authHeaders(token), { appId, chatId, messages: [{ role: 'user', content: 'hello' }] });
      expect(res.statusCode, res.body).toBe(200);
    }
    return {
      ownFile: await uploadChatFile(ownerToken, chatId),
      ownFileOfOtherApp: await uploadChatFile(ownerToken, chatId, otherAppId),
      neighbourFile: await uploadChatFile(otherTeamToken, chatId),
      neighbourFileNamingTheApp: await uploadChatFile(otherTeamToken, chatId, keyAppId),
    };
  }

  async function expectOnlyOwnGone(files: Awaited<ReturnType<typeof sharedChat>>, chatId: string) {
    expect(await chatFileExists(files.ownFile)).toBe(false);
    expect(await chatFileExists(files.ownFileOfOtherApp)).toBe(true);
    expect(await chatFileExists(files.neighbourFile)).toBe(true);
    expect(await chatFileExists(files.neighbourFileNamingTheApp)).toBe(true);
    expect(await db().collection('chats').countDocuments({ chatId })).toBe(1);
    expect(await db().collection('chatitems').countDocuments({ chatId })).toBe(2);
    const neighbour = await ok(t, otherTeamToken, 'POST', '/core/chat/getHistories', { appId: otherTeamAppId });
    expect(neighbour.map((h: { chatId: string }) => h.chatId)).toContain(chatId);
  }

  it('delHistory removes its own chat files and items, never those of another team with the same chat id', async () => {
    const files = await sharedChat('same-id-1');
    await ok(t, ownerToken, 'DELETE', '/core/chat/delHistory', { appId: keyAppId, chatId: 'same-id-1' });
    await expectOnlyOwnGone(files, 'same-id-1');
  });

  it('clearHistories does the same', async () => {
    const files = await sharedChat('same-id-2');
    await ok(t, ownerToken, 'DELETE', '/core/chat/clearHistories', { appId: keyAppId });
    await expectOnlyOwnGone(files, 'same-id-2');
  });
});

describe('a turn goes only into a chat of its own', () => {
  it('a team manager cannot talk in a member chat (nor take it over); the team owner may, and the chat stays the member one', async () => {
    const me = await ok(t, ownerToken, 'GET', '/support/user/account/tokenLogin');
    const teamId = me.team.teamId;
    await createUser(t, { username: 'rec-member', password: 'password-m1', teamId, role: 'member', permission: 4 });
    await createUser(t, { username: 'rec-manager', password: 'password-m2', teamId, role: 'admin', permission: 7 });
    const memberToken = await login(t, 'rec-member', 'password-m1');
    const managerToken = await login(t, 'rec-manager', 'password-m2');
    const appId = await createPublishedApp(t, ownerToken, 'Member chats', simpleChatGraph);
    await ok(t, ownerToken, 'POST', '/core/app/update', { appId, defaultPermission: 4 });
    const say = (token: string, content: string) => completions(authHeaders(token), { appId, chatId: 'member-own', messages: [{ role: 'user', content }] });
    expect((await say(memberToken, 'member words')).statusCode).toBe(200);
    const before = await recordsOf(appId);

    const taken = await say(managerToken, 'manager words');
    expect(taken.statusCode, taken.body).toBe(403);
    expect(taken.json().statusText).toBe('unAuthChat');
    expect(await recordsOf(appId)).toBe(before);
    const histories = await ok(t, memberToken, 'POST', '/core/chat/getHistories', { appId });
    expect(histories.map((h: { chatId: string }) => h.chatId)).toContain('member-own');

    // The team owner may add a turn; the chat stays the member's, in the member's list.
    expect((await say(ownerToken, 'owner words')).statusCode).toBe(200);
    const chat = await db().collection('chats').findOne({ chatId: 'member-own' });
    const member = await db().collection('team_members').findOne({ _id: chat!.tmbId });
    const memberUser = await db().collection('users').findOne({ _id: member!.userId });
    expect(memberUser!.username).toBe('rec-member');
    expect((await ok(t, memberToken, 'POST', '/core/chat/getHistories', { appId })).map((h: { chatId: string }) => h.chatId)).toContain('member-own');
  });
});
