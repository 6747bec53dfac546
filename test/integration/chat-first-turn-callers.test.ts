import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { apiKeyHeaders, createApiKey, createUser, login } from '../helpers/platform.js';
import { ok } from './apps-helpers.js';
import { answerOnlyGraph, createPublishedApp, startChatApp } from './chat-helpers.js';

/**
 * Callers that share a tmbId and a uid: a share link's visitors (the link creator's tmbId, a uid
 * they choose) and that member's API end users (`customUid`). Their first turns of one new chat
 * id, one landing between the other's read ("no chat") and write, are not saved into each
 * other's chat. The turns are held at the chat write, as chat-first-turn-races.test.ts does.
 */
let t: TestApp;
let fake: FakeOpenAi;
let appId: string;
let shareId: string;
let apiKey: string;

const shareTurn = (chatId: string, content: string) =>
  t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', payload: { shareId, outLinkUid: 'alice', chatId, messages: [{ role: 'user', content }] } });

const apiTurn = (chatId: string, content: string) =>
  t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: apiKeyHeaders(apiKey), payload: { chatId, customUid: 'alice', messages: [{ role: 'user', content }] } });

async function stored(chatId: string) {
  const db = t.app.mongo.db;
  const scope = { appId: new ObjectId(appId), chatId };
  const chats = await db.collection('chats').find(scope).toArray();
  const humans = await db.collection('chatitems').find({ ...scope, obj: 'Human' }).toArray();
  return { chats: chats.map((chat) => ({ source: chat.source, shareId: chat.shareId, outLinkUid: chat.outLinkUid })), questions: humans.map((item) => JSON.stringify(item.value)) };
}

/** Runs `late` until its chat write (the first of a chat from `source`), runs `whole` to its end, then lets `late` write. */
async function heldAtChatWrite(source: string, late: () => ReturnType<typeof shareTurn>, whole: () => ReturnType<typeof shareTurn>) {
  const repo = t.app.chat.testing.repo;
  const original = repo.upsertChat;
  let release!: () => void;
  let reached!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const waiting = new Promise<void>((resolve) => (reached = resolve));
  let holding = false;
  repo.upsertChat = async (...args) => {
    if (args[0].source === source && !holding) {
      holding = true;
      reached();
      await released;
    }
    return original(...args);
  };
  try {
    const held = late();
    await waiting;
    const first = await whole();
    release();
    return { first, held: await held };
  } finally {
    repo.upsertChat = original;
    release();
  }
}

beforeAll(async () => {
  ({ t, fake } = await startChatApp());
  await createUser(t, { username: 'same-uid-owner', password: 'password-u1' });
  const token = await login(t, 'same-uid-owner', 'password-u1');
  appId = await createPublishedApp(t, token, 'Answer bot', answerOnlyGraph);
  shareId = await ok(t, token, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'Public', responseDetail: false });
  apiKey = await createApiKey(t, token, { appId });
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('first turns of one chat id by a share visitor and an API end user of the same uid', () => {
  it("the API user's turn is not saved into the visitor's chat made meanwhile", async () => {
    const { first, held } = await heldAtChatWrite(
      'api',
      () => apiTurn('shared-1', 'private question of API user alice'),
      () => shareTurn('shared-1', 'question of visitor alice'),
    );
    expect([first.statusCode, held.statusCode]).toEqual([200, 200]);
    const { chats, questions } = await stored('shared-1');
    expect(chats).toEqual([{ source: 'share', shareId, outLinkUid: 'alice' }]);
    expect(questions).toHaveLength(1);
    expect(questions[0]).toContain('question of visitor alice');
    const init = await t.app.inject({ method: 'GET', url: `/api/core/chat/outLink/init?shareId=${shareId}&outLinkUid=alice&chatId=shared-1` });
    expect(init.statusCode, init.body).toBe(200);
    expect(init.body).not.toContain('private question');
  });

  it("the visitor's turn is not saved into the API user's chat made meanwhile", async () => {
    const { first, held } = await heldAtChatWrite(
      'share',
      () => shareTurn('shared-2', 'question of visitor alice'),
      () => apiTurn('shared-2', 'private question of API user alice'),
    );
    expect([first.statusCode, held.statusCode]).toEqual([200, 200]);
    const { chats, questions } = await stored('shared-2');
    expect(chats).toEqual([{ source: 'api', outLinkUid: 'alice' }]);
    expect(questions).toHaveLength(1);
    expect(questions[0]).toContain('private question of API user alice');
  });

  it("one caller's own two first turns still make one chat", async () => {
    const { first, held } = await heldAtChatWrite(
      'api',
      () => apiTurn('api-twice', 'first'),
      () => apiTurn('api-twice', 'second'),
    );
    expect([first.statusCode, held.statusCode]).toEqual([200, 200]);
    const { chats, questions } = await stored('api-twice');
    expect(chats).toEqual([{ source: 'api', outLinkUid: 'alice' }]);
    expect(questions).toHaveLength(2);
  });
});
