import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildReplica, type TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { createUser, login } from '../helpers/platform.js';
import { ok } from './apps-helpers.js';
import { answerOnlyGraph, createPublishedApp, startChatApp } from './chat-helpers.js';

/**
 * Two first turns of one new chat id at once (a double-clicked send, a client retrying): one
 * chat document holds both turns, so the history list shows the chat once and a delete by
 * chat id removes all of it.
 */
let t: TestApp;
let fake: FakeOpenAi;
let appId: string;
let shareId: string;

const turn = (chatId: string, content: string, visitor = 'visitor-1') =>
  t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', payload: { shareId, outLinkUid: visitor, chatId, messages: [{ role: 'user', content }] } });

async function stored(chatId: string) {
  const db = t.app.mongo.db;
  const scope = { appId: new ObjectId(appId), chatId };
  return { chats: await db.collection('chats').countDocuments(scope), items: await db.collection('chatitems').countDocuments(scope) };
}

/** Holds the repository's chat writes until `count` of them are waiting, then lets them all go at once. */
async function meetingAtChatWrite(count: number, body: () => Promise<void>): Promise<void> {
  const repo = t.app.chat.testing.repo;
  const original = repo.upsertChat;
  let waiting = 0;
  let release!: () => void;
  const allThere = new Promise<void>((resolve) => (release = resolve));
  repo.upsertChat = async (...args) => {
    if (++waiting === count) release();
    await allThere;
    return original(...args);
  };
  try {
    await body();
  } finally {
    repo.upsertChat = original;
    release();
  }
}

beforeAll(async () => {
  ({ t, fake } = await startChatApp());
  await createUser(t, { username: 'first-turns', password: 'password-f1' });
  const tok = await login(t, 'first-turns', 'password-f1');
  appId = await createPublishedApp(t, tok, 'Answer bot', answerOnlyGraph);
  shareId = await ok(t, tok, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'Race link', responseDetail: false });
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('first turns of one new chat id at once', () => {
  it('make one chat holding both turns', async () => {
    for (const chatId of ['twin-1', 'twin-2', 'twin-3']) {
      await meetingAtChatWrite(2, async () => {
        const answers = await Promise.all([turn(chatId, 'first'), turn(chatId, 'second')]);
        expect(answers.map((answer) => answer.statusCode)).toEqual([200, 200]);
      });
      expect(await stored(chatId)).toEqual({ chats: 1, items: 4 });
    }
    const histories = await t.app.inject({ method: 'POST', url: '/api/core/chat/getHistories', payload: { shareId, outLinkUid: 'visitor-1' } });
    const listed = (histories.json().data as { chatId: string }[]).map((chat) => chat.chatId).sort();
    expect(listed).toEqual(['twin-1', 'twin-2', 'twin-3']);
  });

  it('of two visitors: the chat is the one who made it first, and holds none of the other’s turn', async () => {
    await meetingAtChatWrite(2, async () => {
      const answers = await Promise.all([turn('contested', 'question of visitor-1', 'visitor-1'), turn('contested', 'question of visitor-2', 'visitor-2')]);
      expect(answers.map((answer) => answer.statusCode)).toEqual([200, 200]);
    });
    expect(await stored('contested')).toEqual({ chats: 1, items: 2 });
    const db = t.app.mongo.db;
    const chat = await db.collection('chats').findOne({ appId: new ObjectId(appId), chatId: 'contested' });
    const human = await db.collection('chatitems').findOne({ appId: new ObjectId(appId), chatId: 'contested', obj: 'Human' });
    expect(JSON.stringify(human?.value)).toContain(`question of ${chat?.outLinkUid}`);
  });

  it('of two visitors, one whole turn landing between the other’s read and write: that other turn is not saved into it', async () => {
    // visitor-2's turn found no chat and waits at its write while visitor-1's first turn runs whole.
    const repo = t.app.chat.testing.repo;
    const original = repo.upsertChat;
    let release!: () => void;
    let reached!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const waiting = new Promise<void>((resolve) => (reached = resolve));
    repo.upsertChat = async (...args) => {
      if (args[0].outLinkUid === 'visitor-2') {
        reached();
        await released;
      }
      return original(...args);
    };
    try {
      const late = turn('sequenced', 'question of visitor-2', 'visitor-2');
      await waiting;
      expect((await turn('sequenced', 'question of visitor-1', 'visitor-1')).statusCode).toBe(200);
      release();
      expect((await late).statusCode).toBe(200);
    } finally {
      repo.upsertChat = original;
      release();
    }
    expect(await stored('sequenced')).toEqual({ chats: 1, items: 2 });
    const human = await t.app.mongo.db.collection('chatitems').findOne({ appId: new ObjectId(appId), chatId: 'sequenced', obj: 'Human' });
    expect(JSON.stringify(human?.value)).toContain('question of visitor-1');
  });
});

describe('a database holding two documents of one chat id (written before ids were unique)', () => {
  it('keeps the oldest of them at start-up and makes chat ids unique', async () => {
    const chats = t.app.mongo.db.collection('chats');
    await chats.dropIndex('chatId_1_appId_1');
    const app = new ObjectId(appId);
    const base = { appId: app, teamId: new ObjectId(), tmbId: new ObjectId(), updateTime: new Date(), title: 'old', customTitle: '', top: false, source: 'online', variables: {}, metadata: {} };
    const [first, second, third] = [new ObjectId(), new ObjectId(), new ObjectId()];
    await chats.insertMany([
      { ...base, _id: first, chatId: 'doubled' },
      { ...base, _id: second, chatId: 'doubled' },
      { ...base, _id: third, chatId: 'single' },
    ]);
    const replica = await buildReplica(t);
    try {
      expect((await chats.find({ appId: app, chatId: { $in: ['doubled', 'single'] } }).sort({ _id: 1 }).toArray()).map((chat) => chat._id.toHexString())).toEqual([
        first.toHexString(),
        third.toHexString(),
      ]);
      expect((await chats.indexes()).find((index) => index.name === 'chatId_1_appId_1')?.unique).toBe(true);
      expect(replica.logs()).toContain('"removed":1');
    } finally {
      await replica.close();
    }
  });
});
