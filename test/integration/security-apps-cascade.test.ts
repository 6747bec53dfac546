import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { multipart } from '../fixtures/datasets/client.js';
import { ok } from './apps-helpers.js';
import { answerOnlyGraph } from './chat-helpers.js';

/**
 * Chat ids are chosen by clients, so two teams can use the same one. Deleting an app must remove
 * only its own team's chats and chat files, never another team's that share a chatId.
 */
let t: TestApp;
let alice: string;
let bob: string;
let aliceTeam: string;
let bobTeam: string;
const CHAT_ID = 'shared-chat-id';


beforeAll(async () => {
  t = await buildTestApp();
  aliceTeam = (await createUser(t, { username: 'sc-alice', password: 'password-1' })).teamId;
  bobTeam = (await createUser(t, { username: 'sc-bob', password: 'password-1' })).teamId;
  alice = await login(t, 'sc-alice', 'password-1');
  bob = await login(t, 'sc-bob', 'password-1');
});
afterAll(() => t.close());

/** An app that answers without a model, one chat under CHAT_ID, and one chat file for it. */
async function appWithChatFile(token: string, name: string) {
  const appId = await ok(t, token, 'POST', '/core/app/create', { name, type: 'advanced', modules: answerOnlyGraph.nodes, edges: answerOnlyGraph.edges });
  await ok(t, token, 'POST', `/core/app/version/publish?appId=${appId}`, { ...answerOnlyGraph, isPublish: true });
  const chat = await t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: authHeaders(token), payload: { appId, chatId: CHAT_ID, messages: [{ role: 'user', content: 'hi' }] } });
  expect(chat.statusCode, chat.body).toBe(200);
  const body = multipart({ bucketName: 'chat', metadata: JSON.stringify({ chatId: CHAT_ID }) }, { name: `${name}.txt`, content: `file of ${name}`, type: 'text/plain' });
  const upload = await t.app.inject({ method: 'POST', url: '/api/common/file/upload', headers: { ...authHeaders(token), ...body.headers }, payload: body.payload });
  expect(upload.statusCode, upload.body).toBe(200);
  return { appId, fileId: upload.json().data.fileId as string };
}

const teamFiles = (teamId: string) => t.app.mongo.db.collection('chat.files').countDocuments({ 'metadata.teamId': teamId, 'metadata.chatId': CHAT_ID });
const teamChats = (teamId: string) => t.app.mongo.db.collection('chats').countDocuments({ teamId: new ObjectId(teamId), chatId: CHAT_ID });

describe('app delete cascade across teams', () => {
  it('deleting team A’s app leaves team B’s chats and chat files with the same chatId', async () => {
    const a = await appWithChatFile(alice, 'alice app');
    const b = await appWithChatFile(bob, 'bob app');
    expect(await teamFiles(aliceTeam)).toBe(1);
    expect(await teamFiles(bobTeam)).toBe(1);
    expect(await teamChats(bobTeam)).toBe(1);

    await ok(t, alice, 'DELETE', '/core/app/del', { appId: a.appId });

    expect(await teamFiles(aliceTeam)).toBe(0);
    expect(await teamChats(aliceTeam)).toBe(0);
    expect(await teamFiles(bobTeam)).toBe(1);
    expect(await teamChats(bobTeam)).toBe(1);
    const chunks = await t.app.mongo.db.collection('chat.chunks').countDocuments({ files_id: new ObjectId(b.fileId) });
    expect(chunks).toBeGreaterThan(0);
    // Bob's history still answers through the chat routes.
    const records = await ok(t, bob, 'POST', '/core/chat/getHistories', { appId: b.appId });
    expect(records.list ?? records).toEqual(expect.arrayContaining([expect.objectContaining({ chatId: CHAT_ID })]));
  });

  it('removes a chat file tagged with the deleted app even without a saved chat', async () => {
    const appId = await ok(t, alice, 'POST', '/core/app/create', { name: 'tagged', type: 'advanced', modules: answerOnlyGraph.nodes, edges: answerOnlyGraph.edges });
    // Bob names Alice's app id in his own metadata: his file is his team's and stays.
    for (const [token, name] of [
      [alice, 'mine'],
      [bob, 'his'],
    ] as const) {
      const body = multipart({ bucketName: 'chat', metadata: JSON.stringify({ chatId: `unsaved-${name}`, appId }) }, { name: `${name}.txt`, content: name, type: 'text/plain' });
      const upload = await t.app.inject({ method: 'POST', url: '/api/common/file/upload', headers: { ...authHeaders(token), ...body.headers }, payload: body.payload });
      expect(upload.statusCode, upload.body).toBe(200);
    }
    await ok(t, alice, 'DELETE', '/core/app/del', { appId });
    const files = t.app.mongo.db.collection('chat.files');
    expect(await files.countDocuments({ 'metadata.appId': appId, 'metadata.teamId': aliceTeam })).toBe(0);
    expect(await files.countDocuments({ 'metadata.appId': appId, 'metadata.teamId': bobTeam })).toBe(1);
  });
});
