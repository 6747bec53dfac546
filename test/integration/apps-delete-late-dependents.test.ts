import { ObjectId } from 'mongodb';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { commandsDuring } from '../helpers/command-counter.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { multipart } from '../fixtures/datasets/client.js';
import { stallingOnce } from '../helpers/lock-loss.js';
import { apiKeyHeaders, createApiKey, createUser, login } from '../helpers/platform.js';
import { call } from './apps-helpers.js';
import { createPublishedApp, simpleChatGraph, startChatApp } from './chat-helpers.js';

/**
 * Something of an app (a share link, an app key, an input guide, a version, a chat turn) written
 * by a request that authorised on the app while another request deleted it. Without care the
 * delete's dependents pass runs before that write and nothing removes it afterwards: an orphan
 * nobody sees (a key or link that only answers "app not found"). Two ways it can interleave:
 * the write lands after the delete (its writer finds the app gone and removes what it wrote), or
 * before the app documents go but after the dependents pass (the delete's second pass removes it).
 */
let t: TestApp;
let fake: FakeOpenAi;
let token: string;
let teamKey: string;
const restore: (() => void)[] = [];

beforeAll(async () => {
  ({ t, fake } = await startChatApp());
  await createUser(t, { username: 'late-dependents', password: 'password-ld1' });
  token = await login(t, 'late-dependents', 'password-ld1');
  teamKey = await createApiKey(t, token, { name: 'team' });
});
afterEach(() => {
  for (const undo of restore.splice(0)) undo();
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

/** Replaces `object[name]` until the test ends. */
function patch<T extends object, K extends keyof T>(object: T, name: K, replacement: (original: T[K]) => T[K]): void {
  const original = object[name];
  object[name] = replacement(original);
  restore.push(() => {
    object[name] = original;
  });
}

const deleteApp = async (appId: string) => {
  const res = await call(t, token, 'DELETE', '/core/app/del', { appId });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
};

async function leftOf(appId: string): Promise<Record<string, number>> {
  const db = t.app.mongo.db;
  const byApp = { appId: new ObjectId(appId) };
  return {
    outlinks: await db.collection('outlinks').countDocuments(byApp),
    keys: await db.collection('openapis').countDocuments({ appId }),
    guides: await db.collection('chat_input_guides').countDocuments(byApp),
    versions: await db.collection('app_versions').countDocuments(byApp),
    chats: await db.collection('chats').countDocuments(byApp),
    chatitems: await db.collection('chatitems').countDocuments(byApp),
    // A chat file's owner fields, copied from its metadata (the app of a visitor's credential).
    chatFiles: await db.collection('chat.files').countDocuments(byApp),
  };
}
const nothingLeft = { outlinks: 0, keys: 0, guides: 0, versions: 0, chats: 0, chatitems: 0, chatFiles: 0 };

interface Writer {
  name: string;
  /** Makes the writer's own check of the app run `between` (once) right after it answered. */
  stallAfterCheck(between: () => Promise<unknown>): void;
  write(appId: string): Promise<{ status: number; body: unknown }>;
  /** The answer goes out before the write (a chat turn is saved after it): a success either way. */
  answersFirst?: boolean;
}

const viaApps = (between: () => Promise<unknown>) => patch(t.app.apps, 'authorize', (authorize) => stallingOnce(authorize, between));

const writers: Writer[] = [
  {
    name: 'a share link',
    stallAfterCheck: viaApps,
    write: (appId) => call(t, token, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'late link' }),
  },
  {
    name: 'an app key',
    stallAfterCheck: viaApps,
    write: (appId) => call(t, token, 'POST', '/support/openapi/create', { appId, name: 'late key' }),
  },
  {
    name: 'an input guide',
    stallAfterCheck: viaApps,
    write: (appId) => call(t, token, 'POST', '/core/chat/inputGuide/create', { appId, textList: ['late guide'] }),
  },
  {
    name: 'a published version',
    stallAfterCheck: (between) => patch(t.app.apps.core, 'authorizeWrite', (authorize) => stallingOnce(authorize, between)),
    write: (appId) => call(t, token, 'POST', `/core/app/version/publish?appId=${appId}`, { ...simpleChatGraph, isPublish: true, versionName: 'late' }),
  },
  {
    name: "a share-page visitor's chat file",
    // The visitor's credential is resolved (its link and app found) and the file about to be stored.
    stallAfterCheck: (between) =>
      patch(t.app.datasets.ctx.repos.files, 'upload', (upload) => async (...args) => {
        await between();
        return upload(...args);
      }),
    write: async (appId) => {
      const shareId = (await call(t, token, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'visitors' })).data as string;
      const form = multipart({ shareId, outLinkUid: 'late-visitor', bucketName: 'chat', metadata: JSON.stringify({ chatId: 'late-visitor-chat' }) }, { name: 'late.txt', content: 'a late attachment' });
      const res = await t.app.inject({ method: 'POST', url: '/api/common/file/upload', payload: form.payload, headers: form.headers });
      return { status: res.statusCode, body: res.json() };
    },
  },
  {
    name: 'a chat turn',
    answersFirst: true,
    // The turn's answer is ready and about to be saved.
    stallAfterCheck: (between) =>
      patch(t.app.chat.testing.repo, 'insertItems', (insertItems) => async (...args) => {
        await between();
        return insertItems(...args);
      }),
    write: async (appId) => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/v1/chat/completions',
        // A team key naming the app: an app key would go with the app, before the turn.
        headers: { ...apiKeyHeaders(teamKey), 'content-type': 'application/json' },
        payload: JSON.stringify({ appId, chatId: 'late-chat', messages: [{ role: 'user', content: 'still there?' }] }),
      });
      return { status: res.statusCode, body: res.json() };
    },
  },
];

describe('a dependent written while its app is deleted', () => {
  for (const writer of writers) {
    it(`${writer.name} that lands after the delete is taken back by its writer`, async () => {
      const appId = await createPublishedApp(t, token, `late ${writer.name}`, simpleChatGraph);
      writer.stallAfterCheck(() => deleteApp(appId));
      const res = await writer.write(appId);
      if (writer.answersFirst) {
        // The answer was given before the turn was saved: it stands, the saved turn does not.
        expect(res.status, JSON.stringify(res.body)).toBe(200);
      } else {
        expect(res.status, JSON.stringify(res.body)).toBe(404);
        expect(res.body).toMatchObject({ statusText: 'appUnExist' });
      }
      expect(await leftOf(appId)).toEqual(nothingLeft);
    });

    it(`${writer.name} that lands between the delete's dependents pass and the app documents is removed by its second pass`, async () => {
      const appId = await createPublishedApp(t, token, `between ${writer.name}`, simpleChatGraph);
      let written: { status: number; body: unknown } | undefined;
      patch(t.app.apps.deps.apps, 'deleteLevels', (deleteLevels) => async (...args) => {
        written ??= await writer.write(appId);
        return deleteLevels(...args);
      });
      await deleteApp(appId);
      // The app stood when the writer checked it: its answer is a success.
      expect(written?.status, JSON.stringify(written?.body)).toBe(200);
      expect(await leftOf(appId)).toEqual(nothingLeft);
    });
  }

  it('a write to an app that stands is kept, and the check reads the app from the cache', async () => {
    const appId = await createPublishedApp(t, token, 'standing', simpleChatGraph);
    const res = await call(t, token, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'kept link' });
    expect(res.status).toBe(200);
    expect((await leftOf(appId)).outlinks).toBe(1);
    const teamId = (await t.app.mongo.db.collection('apps').findOne({ _id: new ObjectId(appId) }))!.teamId.toHexString();
    await t.app.apps.afterDependentWrite(teamId, appId);
    let stands: boolean | undefined;
    const commands = await commandsDuring(t.app, async () => {
      stands = await t.app.apps.afterDependentWrite(teamId, appId);
    });
    expect(stands).toBe(true);
    expect(commands.filter((c) => c.collection === 'apps')).toEqual([]);
  });
});
