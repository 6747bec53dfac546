import { type Db, ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { createMongo, ensureIndexes, type Mongo } from '../../src/infra/mongo.js';
import { CHAT_INDEXES } from '../../src/platform/chat/chat.repo.js';
import { completeChatKey, giveChatIdsToChatsWithout, ownChatId, removeDuplicateChats } from '../../src/platform/chat/chat-dedupe.repo.js';
import { freshDatabaseUri, testConfig } from '../helpers/app.js';

/**
 * The start-up repair before the unique `{chatId, appId}` index (chat-dedupe.repo.ts) on chats
 * this service did not write: without `chatId`, `appId` or both. The client drops undefined filter
 * values (ignoreUndefined), so a delete built from such a group's key matched every chat of the
 * app, or of the deployment. On MongoDB a unique build fails over two such chats of one app (a
 * missing field is indexed as null) and so ran the repair; FerretDB builds over missing fields,
 * so the start-up cases use explicit nulls, which it refuses too.
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

/** The key MongoDB's unique index gives a chat: a missing field is indexed as null. */
const mongoIndexKey = (doc: Record<string, unknown>) => JSON.stringify([doc.chatId ?? null, doc.appId ?? null]);

describe('giving chats without a chat id their own', () => {
  it('sets each missing or null chat id to the chat’s own id and leaves every other chat as it was', async () => {
    const own = createMongo(freshDatabaseUri());
    const db = own.db;
    const chats = db.collection<Record<string, unknown>>('chats');
    try {
      const seeded: Record<string, unknown>[] = [
        chat({ appId: appA, chatId: 'c1' }, 'A c1'),
        chat({ appId: appA }, 'A no chatId 1'),
        chat({ appId: appA }, 'A no chatId 2'),
        chat({ appId: appA, chatId: null }, 'A null chatId'),
        chat({}, 'nothing 1'),
        chat({}, 'nothing 2'),
        chat({ appId: appB, chatId: 7 }, 'B number chatId'),
        { ...chat({ appId: appB }, 'B string _id'), _id: 'imported-1' },
      ];
      await chats.insertMany(seeded);
      // MongoDB's unique build fails here: four chats share the key [null, appA], two [null, null].
      const keysBefore = (await chats.find({}).toArray()).map(mongoIndexKey);
      expect(new Set(keysBefore).size).toBeLessThan(keysBefore.length);

      expect(await giveChatIdsToChatsWithout(db)).toBe(6);
      const after = new Map((await chats.find({}).toArray()).map((doc) => [doc.title as string, doc]));
      for (const doc of seeded) {
        const title = String(doc.title);
        const stored = after.get(title);
        const hadNone = doc.chatId === undefined || doc.chatId === null;
        expect(stored?.chatId, title).toEqual(hadNone ? ownChatId(doc._id) : doc.chatId);
        expect({ ...stored, chatId: undefined }, title).toEqual({ ...doc, chatId: undefined });
      }
      expect(after.get('A no chatId 1')?.chatId).toBe(String(seeded[1]?._id));
      expect(after.get('B string _id')?.chatId).toBe('imported-1');
      // No two chats share a key as MongoDB indexes them, and the index builds here too.
      const keysAfter = [...after.values()].map(mongoIndexKey);
      expect(new Set(keysAfter).size).toBe(keysAfter.length);
      await ensureIndexes(db, CHAT_INDEXES);
      // Nothing is left without one: a second run changes nothing.
      expect(await giveChatIdsToChatsWithout(db)).toBe(0);
    } finally {
      await db.dropDatabase().catch(() => undefined);
      await own.client.close();
    }
  });

  it('takes only an ObjectId or a non-empty string id as the chat id', () => {
    expect(ownChatId(appA)).toBe(appA.toHexString());
    expect(ownChatId('x1')).toBe('x1');
    expect(ownChatId('')).toBeNull();
    expect(ownChatId(7)).toBeNull();
    expect(ownChatId({ a: 1 })).toBeNull();
  });
});

/** Builds the app on `seeded` chats and answers the start-up failure (null when it started). */
async function startOver(seeded: Record<string, unknown>[], check: (app: Awaited<ReturnType<typeof buildApp>>, db: Db, failure: Error | null) => Promise<void>) {
  const uri = freshDatabaseUri();
  const seed = createMongo(uri);
  const app = await buildApp(testConfig({ MONGODB_URI: uri }));
  try {
    await seed.db.collection('chats').insertMany(seeded);
    const failure = await app.ready().then(
      () => null,
      (error: Error) => error,
    );
    await check(app, seed.db, failure);
  } finally {
    await app.close().catch(() => undefined);
    await seed.db.dropDatabase().catch(() => undefined);
    await seed.client.close();
  }
}

describe('start-up over chats whose keys collide without a chat id', () => {
  it('gives chats without a chat id their own, removes the doubles of real chat ids, deletes no other chat and starts', async () => {
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
    await startOver(seeded, async (app, db, failure) => {
      expect(failure).toBeNull();
      expect(await titles(db)).toEqual(seeded.map((doc) => doc.title).filter((title) => title !== 'd second').sort());
      const unnamed = seeded.filter((doc) => !('chatId' in doc) || doc.chatId === null);
      for (const doc of unnamed) {
        expect((await db.collection('chats').findOne({ _id: doc._id }))?.chatId, doc.title).toBe(doc._id.toHexString());
      }
      // Readable as a chat of its app under that id.
      const named = seeded.find((doc) => doc.title === 'no chatId 1')!;
      expect((await app.chat.testing.repo.findChat(appA.toHexString(), named._id.toHexString()))?.title).toBe('no chatId 1');
      const unique = (await db.collection('chats').indexes()).find((index) => index.name === 'chatId_1_appId_1');
      expect(unique?.unique).toBe(true);
    });
  });

  it('still stops with an error naming the chats to fix when chat ids of another type collide', async () => {
    const seeded = [
      chat({ appId: appA, chatId: 'c1' }, 'c1'),
      chat({ appId: appA, chatId: 7 }, 'number chatId 1'),
      chat({ appId: appA, chatId: 7 }, 'number chatId 2'),
      chat({ appId: appA }, 'no chatId'),
    ];
    await startOver(seeded, async (_app, db, failure) => {
      expect(await titles(db)).toEqual(seeded.map((doc) => doc.title).sort());
      expect(failure?.message).toMatch(/start-up task 'indexes: chat' failed: .*2 chat document\(s\) have a chatId that is not a string or an appId that is not an ObjectId/);
      expect(failure?.message).toContain('db.chats.find({$nor: [{"appId":{"$type":"objectId"},"chatId":{"$type":"string"}}]})');
    });
  });
});
