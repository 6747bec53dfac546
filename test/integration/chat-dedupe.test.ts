import { type Db, ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { createMongo, type Mongo } from '../../src/infra/mongo.js';
import { completeChatKey, removeDuplicateChats } from '../../src/platform/chat/chat-dedupe.repo.js';
import { freshDatabaseUri, testConfig } from '../helpers/app.js';

/**
 * The start-up clean-up before the unique `{chatId, appId}` index (chat-dedupe.repo.ts) on chats
 * this service did not write: without `chatId`, `appId` or both. The client drops undefined filter
 * values (ignoreUndefined), so a delete built from such a group's key matched every chat of the
 * app, or of the deployment. On MongoDB a unique build fails over two such chats of one app (a
 * missing field is indexed as null) and so ran the clean-up; FerretDB builds over missing fields,
 * so the start-up case uses explicit nulls, which it refuses too.
 */
let mongo: Mongo;

beforeAll(() => {
  // The app's own client options (ignoreUndefined among them).
  mongo = createMongo(freshDatabaseUri());
});
afterAll(async () => {
  await mongo.db.dropDatabase().catch(() => undefined);
  await mongo.client.close();
});

const appA = new ObjectId();
const appB = new ObjectId();
const chat = (fields: Record<string, unknown>, title: string) => ({ _id: new ObjectId(), teamId: new ObjectId(), title, updateTime: new Date(), ...fields });
const titles = async (db: Db) => (await db.collection('chats').find({}).sort({ _id: 1 }).toArray()).map((doc) => doc.title as string).sort();

describe('removing second documents of one chat id', () => {
  it('groups only chats with a string chatId and an ObjectId appId, and deletes only their later doubles', async () => {
    const chats = mongo.db.collection('chats');
    const seeded = [
      chat({ appId: appA, chatId: 'c1' }, 'A c1'),
      chat({ appId: appA, chatId: 'c2' }, 'A c2'),
      chat({ appId: appA, chatId: 'd' }, 'A d first'),
      chat({ appId: appA, chatId: 'd' }, 'A d second'),
      chat({ appId: appA, chatId: 'd' }, 'A d third'),
      chat({ appId: appA }, 'A no chatId 1'),
      chat({ appId: appA }, 'A no chatId 2'),
      chat({ appId: appA, chatId: null }, 'A null chatId 1'),
      chat({ appId: appA, chatId: null }, 'A null chatId 2'),
      chat({ chatId: 'c1' }, 'no appId c1 1'),
      chat({ chatId: 'c1' }, 'no appId c1 2'),
      chat({}, 'nothing 1'),
      chat({}, 'nothing 2'),
      chat({ appId: appB, chatId: 'c1' }, 'B c1'),
      chat({ appId: appB, chatId: 'e' }, 'B e first'),
      chat({ appId: appB, chatId: 'e' }, 'B e second'),
      chat({ appId: appB, chatId: 7 }, 'B number chatId 1'),
      chat({ appId: appB, chatId: 7 }, 'B number chatId 2'),
      chat({ appId: appB.toHexString(), chatId: 'c2' }, 'B string appId 1'),
      chat({ appId: appB.toHexString(), chatId: 'c2' }, 'B string appId 2'),
    ];
    await chats.insertMany(seeded);

    expect(await removeDuplicateChats(mongo.db)).toBe(3);
    const gone = ['A d second', 'A d third', 'B e second'];
    expect(await titles(mongo.db)).toEqual(seeded.map((doc) => doc.title).filter((title) => !gone.includes(title)).sort());
    // Nothing doubled is left to remove: a second run deletes nothing.
    expect(await removeDuplicateChats(mongo.db)).toBe(0);
  });

  it('builds no filter from an incomplete key', () => {
    expect(completeChatKey({ appId: appA })).toBeNull();
    expect(completeChatKey({ chatId: 'c1' })).toBeNull();
    expect(completeChatKey({})).toBeNull();
    expect(completeChatKey({ appId: appA, chatId: null })).toBeNull();
    expect(completeChatKey({ appId: appA.toHexString(), chatId: 'c1' })).toBeNull();
    expect(completeChatKey({ appId: appA, chatId: 'c1' })).toEqual({ appId: appA, chatId: 'c1' });
  });
});

describe('start-up over chats whose keys collide without a chat id', () => {
  it('removes the doubles of real chat ids, deletes no other chat and stops with an error naming the chats to fix', async () => {
    const uri = freshDatabaseUri();
    const seed = createMongo(uri);
    const app = await buildApp(testConfig({ MONGODB_URI: uri }));
    try {
      const seeded = [
        chat({ appId: appA, chatId: 'c1' }, 'c1'),
        chat({ appId: appA, chatId: 'c2' }, 'c2'),
        chat({ appId: appA, chatId: 'd' }, 'd first'),
        chat({ appId: appA, chatId: 'd' }, 'd second'),
        // Doubled under the unique index: on MongoDB as missing, here as explicit null.
        chat({ appId: appA, chatId: null }, 'null chatId 1'),
        chat({ appId: appA, chatId: null }, 'null chatId 2'),
        chat({ appId: appA }, 'no chatId 1'),
        chat({ appId: appA }, 'no chatId 2'),
        chat({}, 'nothing 1'),
        chat({}, 'nothing 2'),
      ];
      await seed.db.collection('chats').insertMany(seeded);

      const failure = await app.ready().then(
        () => null,
        (error: Error) => error,
      );
      expect(await titles(seed.db)).toEqual(seeded.map((doc) => doc.title).filter((title) => title !== 'd second').sort());
      expect(failure?.message).toMatch(/start-up task 'indexes: chat' failed: .*6 chat document\(s\) have no string chatId or no ObjectId appId/);
      expect(failure?.message).toContain('db.chats.find({$nor: [{"appId":{"$type":"objectId"},"chatId":{"$type":"string"}}]})');
    } finally {
      await app.close().catch(() => undefined);
      await seed.db.dropDatabase().catch(() => undefined);
      await seed.client.close();
    }
  });
});
