import { Collection, ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { createUser, login } from '../helpers/platform.js';
import { ok } from './apps-helpers.js';
import { answerOnlyGraph, createPublishedApp, startChatApp } from './chat-helpers.js';

/**
 * A chat deleted (delHistory, clearHistories) while one of its turns is being saved: once the
 * delete has answered, none of its items is left, at whatever step of the save it landed, and
 * the next caller of that chat id (another share visitor) gets none of them.
 */
let t: TestApp;
let fake: FakeOpenAi;
let appId: string;
let shareId: string;

const inject = (method: 'GET' | 'POST', url: string, payload?: Record<string, unknown>) => t.app.inject({ method, url: `/api${url}`, ...(payload ? { payload } : {}) });
const turn = (visitor: string, chatId: string, content: string) => inject('POST', '/v1/chat/completions', { shareId, outLinkUid: visitor, chatId, messages: [{ role: 'user', content }] });
const delHistory = (visitor: string, chatId: string) => inject('GET', `/core/chat/delHistory?shareId=${shareId}&outLinkUid=${visitor}&chatId=${chatId}&appId=${appId}`);
const clearHistories = (visitor: string) => inject('GET', `/core/chat/clearHistories?shareId=${shareId}&outLinkUid=${visitor}`);
const historyOf = async (visitor: string, chatId: string) => JSON.stringify((await inject('GET', `/core/chat/outLink/init?shareId=${shareId}&outLinkUid=${visitor}&chatId=${chatId}`)).json().data.history);

async function left(chatId: string) {
  const db = t.app.mongo.db;
  const scope = { appId: new ObjectId(appId), chatId };
  return { chats: await db.collection('chats').countDocuments(scope), items: await db.collection('chatitems').countDocuments(scope) };
}

/** A gate: `reached` resolves once something waits at it, which goes on after `open()`. */
function gate() {
  let open!: () => void;
  let reach!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  const reached = new Promise<void>((resolve) => (reach = resolve));
  const pass = () => {
    reach();
    return opened;
  };
  return { open, reached, pass };
}

/** Holds the first call of the repository's `method` at a gate (later ones pass) during `body`. */
async function holding<K extends 'upsertChat' | 'insertItems'>(method: K, body: (held: ReturnType<typeof gate>) => Promise<void>): Promise<void> {
  const repo = t.app.chat.testing.repo;
  const original = repo[method];
  const held = gate();
  let calls = 0;
  (repo as Record<K, unknown>)[method] = async (...args: unknown[]) => {
    if (calls++ === 0) await held.pass();
    return (original as (...a: unknown[]) => Promise<unknown>)(...args);
  };
  try {
    await body(held);
  } finally {
    repo[method] = original;
    held.open();
  }
}

beforeAll(async () => {
  ({ t, fake } = await startChatApp());
  await createUser(t, { username: 'racer', password: 'password-r1' });
  const tok = await login(t, 'racer', 'password-r1');
  appId = await createPublishedApp(t, tok, 'Answer bot', answerOnlyGraph);
  shareId = await ok(t, tok, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'Race link', responseDetail: false });
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('a chat deleted while a turn of it is saved', () => {
  it('before the chat is written: the turn is not saved and the chat not made again', async () => {
    expect((await turn('visitor-a', 'before-save', 'first question')).statusCode).toBe(200);
    await holding('upsertChat', async (held) => {
      const second = turn('visitor-a', 'before-save', 'second question');
      await held.reached;
      expect((await delHistory('visitor-a', 'before-save')).statusCode).toBe(200);
      held.open();
      expect((await second).statusCode).toBe(200);
    });
    expect(await left('before-save')).toEqual({ chats: 0, items: 0 });
  });

  it('between the chat and its items (delHistory): nothing is left, and the next visitor of the chat id sees none of it', async () => {
    expect((await turn('visitor-a', 'between', 'first question')).statusCode).toBe(200);
    await holding('insertItems', async (held) => {
      const second = turn('visitor-a', 'between', 'second private question');
      await held.reached;
      expect((await delHistory('visitor-a', 'between')).statusCode).toBe(200);
      // Another visitor makes a new chat under that id before the held items are written.
      expect((await turn('visitor-b', 'between', 'hello')).statusCode).toBe(200);
      held.open();
      expect((await second).statusCode).toBe(200);
    });
    expect(await left('between')).toEqual({ chats: 1, items: 2 });
    expect(await historyOf('visitor-b', 'between')).not.toContain('private question');
  });

  it('between the chat and its items (clearHistories): nothing is left', async () => {
    expect((await turn('visitor-c', 'cleared', 'first question')).statusCode).toBe(200);
    await holding('insertItems', async (held) => {
      const second = turn('visitor-c', 'cleared', 'second question');
      await held.reached;
      expect((await clearHistories('visitor-c')).statusCode).toBe(200);
      held.open();
      expect((await second).statusCode).toBe(200);
    });
    expect(await left('cleared')).toEqual({ chats: 0, items: 0 });
  });

  it('items written after the delete removed the items but before it removed the chat: nothing is left', async () => {
    expect((await turn('visitor-d', 'late-items', 'first question')).statusCode).toBe(200);
    // Holds the delete of the chat document (the items' delete has run by then).
    const chatDelete = gate();
    const bulkWrite = Collection.prototype.bulkWrite;
    Collection.prototype.bulkWrite = async function (this: Collection, ...args: Parameters<typeof bulkWrite>) {
      if (this.collectionName === 'chats') await chatDelete.pass();
      return bulkWrite.apply(this, args);
    } as typeof bulkWrite;
    try {
      await holding('insertItems', async (held) => {
        const second = turn('visitor-d', 'late-items', 'second question');
        await held.reached;
        const deleted = delHistory('visitor-d', 'late-items');
        await chatDelete.reached;
        // The items go in and the save finds its chat standing: it keeps them.
        held.open();
        expect((await second).statusCode).toBe(200);
        chatDelete.open();
        expect((await deleted).statusCode).toBe(200);
      });
    } finally {
      Collection.prototype.bulkWrite = bulkWrite;
      chatDelete.open();
    }
    expect(await left('late-items')).toEqual({ chats: 0, items: 0 });
  });
});
