import { Collection, ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { findFiltersDuring } from '../helpers/command-counter.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { createChatFilesRepo } from '../../src/platform/chat/chat-files.repo.js';
import { multipart } from '../fixtures/datasets/client.js';
import { ok } from './apps-helpers.js';
import { answerOnlyGraph, createPublishedApp } from './chat-helpers.js';

/**
 * Chat files repeat their team, chat and app at top level, and a chat's delete finds them by
 * those fields by equality only: FerretDB 1.24 passes no `metadata.*` path and no `$in` down,
 * so the former filter read every chat file of the deployment on each delete.
 */
let t: TestApp;
let owner: string;
let neighbour: string;
let ownerTeam: string;
let neighbourTeam: string;


const files = () => t.app.mongo.db.collection('chat.files');
const chunks = () => t.app.mongo.db.collection('chat.chunks');
const exists = async (fileId: string) => (await files().countDocuments({ _id: new ObjectId(fileId) })) === 1;

beforeAll(async () => {
  t = await buildTestApp();
  ownerTeam = (await createUser(t, { username: 'cf-owner', password: 'password-1' })).teamId;
  neighbourTeam = (await createUser(t, { username: 'cf-neighbour', password: 'password-1' })).teamId;
  owner = await login(t, 'cf-owner', 'password-1');
  neighbour = await login(t, 'cf-neighbour', 'password-1');
  // Start-up runs the migration in the background; until it is seen done, deletes also read by metadata.
  expect(await t.app.chat.testing.files.addMissingOwners()).toBe(true);
});
afterAll(() => t.close());

const createApp = (token: string, name: string) => createPublishedApp(t, token, name, answerOnlyGraph);

async function chat(token: string, appId: string, chatId: string): Promise<void> {
  const res = await t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: authHeaders(token), payload: { appId, chatId, messages: [{ role: 'user', content: 'hi' }] } });
  expect(res.statusCode, res.body).toBe(200);
}

async function upload(token: string, bucketName: 'chat' | 'dataset', metadata: Record<string, unknown>): Promise<string> {
  const body = multipart({ bucketName, metadata: JSON.stringify(metadata) }, { name: 'note.txt', content: 'a note', type: 'text/plain' });
  const res = await t.app.inject({ method: 'POST', url: '/api/common/file/upload', headers: { ...authHeaders(token), ...body.headers }, payload: body.payload });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data.fileId as string;
}

const chatFileFinds = (run: () => Promise<unknown>) => findFiltersDuring(t.app, 'chat.files', run);

/** Only top-level equalities on the owner fields: what FerretDB passes down. */
function expectEqualitiesOnOwnerFields(filters: Record<string, unknown>[]) {
  expect(filters.length).toBeGreaterThan(0);
  for (const filter of filters) {
    for (const [key, value] of Object.entries(filter)) {
      expect(['teamId', 'chatId', 'appId'], JSON.stringify(filter)).toContain(key);
      expect(typeof value === 'string' || value instanceof ObjectId, JSON.stringify(filter)).toBe(true);
    }
  }
}

describe('owner fields of chat files', () => {
  it('an upload into the chat bucket stores its team, chat and app at top level; the dataset bucket does not', async () => {
    const appId = await createApp(owner, 'uploads');
    const named = await upload(owner, 'chat', { chatId: 'u1', appId });
    const appless = await upload(owner, 'chat', { chatId: 'u2' });
    const oddApp = await upload(owner, 'chat', { chatId: 'u3', appId: 'not-an-id' });
    const dataset = await upload(owner, 'dataset', {});
    const doc = async (id: string, bucket = 'chat') => t.app.mongo.db.collection(`${bucket}.files`).findOne({ _id: new ObjectId(id) });
    expect(await doc(named)).toMatchObject({ teamId: new ObjectId(ownerTeam), chatId: 'u1', appId: new ObjectId(appId), metadata: { chatId: 'u1', appId, teamId: ownerTeam } });
    expect(await doc(appless)).toMatchObject({ teamId: new ObjectId(ownerTeam), chatId: 'u2', appId: '' });
    expect(await doc(oddApp)).toMatchObject({ chatId: 'u3', appId: 'not-an-id' });
    const datasetDoc = await doc(dataset, 'dataset');
    expect(datasetDoc?.metadata.teamId).toBe(ownerTeam);
    expect(datasetDoc).not.toHaveProperty('teamId');
  });

  it("delHistory finds the chat's files by equality and removes them with their chunks, nothing else", async () => {
    const appId = await createApp(owner, 'one chat');
    const otherApp = await createApp(owner, 'other app');
    const neighbourApp = await createApp(neighbour, 'neighbour app');
    await chat(owner, appId, 'd1');
    await chat(neighbour, neighbourApp, 'd1');
    const gone = [await upload(owner, 'chat', { chatId: 'd1', appId }), await upload(owner, 'chat', { chatId: 'd1' })];
    const kept = [
      await upload(owner, 'chat', { chatId: 'd1', appId: otherApp }),
      await upload(owner, 'chat', { chatId: 'd1', appId: 'not-an-id' }),
      await upload(owner, 'chat', { chatId: 'd2', appId }),
      await upload(neighbour, 'chat', { chatId: 'd1' }),
      await upload(neighbour, 'chat', { chatId: 'd1', appId }),
    ];
    const finds = await chatFileFinds(() => ok(t, owner, 'DELETE', '/core/chat/delHistory', { appId, chatId: 'd1' }));
    expectEqualitiesOnOwnerFields(finds);
    for (const id of gone) {
      expect(await exists(id)).toBe(false);
      expect(await chunks().countDocuments({ files_id: new ObjectId(id) })).toBe(0);
    }
    for (const id of kept) expect(await exists(id), id).toBe(true);
  });

  // The file documents went first: a delete stopped before the chunks left chunks that no file
  // named, which the retry (the chat was still there) could not find.
  it('a delHistory stopped at either step is completed by its retry, nothing left', async () => {
    for (const [index, failing] of ['chat.chunks', 'chat.files'].entries()) {
      const appId = await createApp(owner, `stopped delete ${index}`);
      await chat(owner, appId, 's1');
      const fileId = await upload(owner, 'chat', { chatId: 's1', appId });
      const bulkWrite = Collection.prototype.bulkWrite;
      let armed = true;
      Collection.prototype.bulkWrite = function (this: Collection, ...args: Parameters<typeof bulkWrite>) {
        if (armed && this.collectionName === failing) {
          armed = false;
          return Promise.reject(new Error('connection reset'));
        }
        return bulkWrite.apply(this, args);
      } as typeof bulkWrite;
      try {
        const stopped = await t.app.inject({ method: 'DELETE', url: `/api/core/chat/delHistory?appId=${appId}&chatId=s1`, headers: authHeaders(owner) });
        expect(stopped.statusCode, failing).toBeGreaterThanOrEqual(500);
      } finally {
        Collection.prototype.bulkWrite = bulkWrite;
      }
      await ok(t, owner, 'DELETE', '/core/chat/delHistory', { appId, chatId: 's1' });
      expect(await exists(fileId), failing).toBe(false);
      expect(await chunks().countDocuments({ files_id: new ObjectId(fileId) }), failing).toBe(0);
    }
  });

  it('clearHistories of many chats reads app by app, and still removes only those chats’ files', async () => {
    const appId = await createApp(owner, 'many chats');
    const otherApp = await createApp(owner, 'bystander');
    const chatIds = Array.from({ length: 20 }, (_, i) => `m${i}`);
    for (const chatId of chatIds) await chat(owner, appId, chatId);
    const gone = await Promise.all(chatIds.map((chatId, i) => upload(owner, 'chat', i % 2 ? { chatId, appId } : { chatId })));
    const kept = [
      await upload(owner, 'chat', { chatId: 'm0', appId: otherApp }),
      await upload(owner, 'chat', { chatId: 'not-a-chat-of-the-app' }),
      await upload(neighbour, 'chat', { chatId: 'm1', appId }),
    ];
    const finds = await chatFileFinds(() => ok(t, owner, 'DELETE', '/core/chat/clearHistories', { appId }));
    expectEqualitiesOnOwnerFields(finds);
    expect(finds.length).toBeLessThan(chatIds.length);
    for (const id of gone) expect(await exists(id), id).toBe(false);
    for (const id of kept) expect(await exists(id), id).toBe(true);
  });

  it('an app delete removes every file naming the app and the app-less files of its chats', async () => {
    const appId = await createApp(owner, 'doomed');
    await chat(owner, appId, 'x1');
    const gone = [await upload(owner, 'chat', { chatId: 'x1' }), await upload(owner, 'chat', { chatId: 'never-saved', appId })];
    const kept = [await upload(owner, 'chat', { chatId: 'never-saved' }), await upload(neighbour, 'chat', { chatId: 'x1' })];
    const finds = await chatFileFinds(() => ok(t, owner, 'DELETE', '/core/app/del', { appId }));
    expectEqualitiesOnOwnerFields(finds);
    for (const id of gone) expect(await exists(id), id).toBe(false);
    for (const id of kept) expect(await exists(id), id).toBe(true);
  });
});

describe('chat files stored before the owner fields', () => {
  /** A file as an earlier version (or the reference system) stored it: metadata only. */
  async function legacyFile(metadata: Record<string, unknown>): Promise<ObjectId> {
    const _id = new ObjectId();
    await files().insertOne({ _id, length: 4, chunkSize: 261120, uploadDate: new Date(), filename: 'old.txt', metadata });
    await chunks().insertOne({ files_id: _id, n: 0, data: Buffer.from('old!') });
    return _id;
  }

  it('are deleted with their chats by metadata until a process has seen the migration finished', async () => {
    const appId = await createApp(owner, 'before migration');
    const pending = createChatFilesRepo(t.app.mongo.db);
    const old = await legacyFile({ chatId: 'pending-chat', appId, teamId: ownerTeam });
    const otherChat = await legacyFile({ chatId: 'another-chat', appId, teamId: ownerTeam });
    const neighbours = await legacyFile({ chatId: 'pending-chat', teamId: neighbourTeam });
    const current = await upload(owner, 'chat', { chatId: 'pending-chat', appId });
    const finds = await chatFileFinds(() => pending.deleteFiles(ownerTeam, [appId], ['pending-chat'], false));
    expect(finds.some((filter) => 'metadata.teamId' in filter)).toBe(true);
    expect(await files().countDocuments({ _id: { $in: [old, new ObjectId(current)] } })).toBe(0);
    expect(await files().countDocuments({ _id: { $in: [otherChat, neighbours] } })).toBe(2);
    await files().deleteMany({ _id: { $in: [otherChat, neighbours] } });
  });

  it('get them from their metadata once per deployment, and are then deleted with their chats', async () => {
    expect(await t.app.mongo.db.collection('migrations').findOne({ _id: 'chat-file-owner-fields' as never })).not.toBeNull();
    const appId = await createApp(owner, 'legacy');
    await chat(owner, appId, 'old-chat');
    const byString = await legacyFile({ chatId: 'old-chat', appId, teamId: ownerTeam });
    const byObjectIds = await legacyFile({ chatId: 'old-chat', appId: new ObjectId(appId), teamId: new ObjectId(ownerTeam) });
    const neighbours = await legacyFile({ chatId: 'old-chat', teamId: neighbourTeam });
    const teamless = await legacyFile({ chatId: 'old-chat' });

    // Already done at start-up: a second run does nothing.
    expect(await t.app.chat.testing.files.addMissingOwners()).toBe(true);
    expect(await files().findOne({ _id: byString })).not.toHaveProperty('teamId');

    await t.app.mongo.db.collection('migrations').deleteOne({ _id: 'chat-file-owner-fields' as never });
    // A process shutting down leaves it unfinished and unrecorded.
    expect(await t.app.chat.testing.files.addMissingOwners(() => true)).toBe(false);
    expect(await files().findOne({ _id: byString })).not.toHaveProperty('teamId');
    expect(await t.app.chat.testing.files.addMissingOwners()).toBe(true);
    expect(await files().findOne({ _id: byString })).toMatchObject({ teamId: new ObjectId(ownerTeam), chatId: 'old-chat', appId: new ObjectId(appId) });
    expect(await files().findOne({ _id: byObjectIds })).toMatchObject({ teamId: new ObjectId(ownerTeam), appId: new ObjectId(appId) });
    expect(await files().findOne({ _id: neighbours })).toMatchObject({ teamId: new ObjectId(neighbourTeam), appId: '' });
    expect(await files().findOne({ _id: teamless })).toMatchObject({ teamId: null });

    await ok(t, owner, 'DELETE', '/core/chat/delHistory', { appId, chatId: 'old-chat' });
    expect(await files().countDocuments({ _id: { $in: [byString, byObjectIds] } })).toBe(0);
    expect(await chunks().countDocuments({ files_id: { $in: [byString, byObjectIds] } })).toBe(0);
    expect(await files().countDocuments({ _id: { $in: [neighbours, teamless] } })).toBe(2);
  });
});
