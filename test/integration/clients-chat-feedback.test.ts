import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { apiKeyHeaders, createApiKey, createUser, login } from '../helpers/platform.js';
import { call, ok } from './apps-helpers.js';
import { createPublishedApp, simpleChatGraph, startChatApp } from './chat-helpers.js';

/**
 * The app logs' "annotate" action of the web client: it stores the corrected answer in a
 * dataset (insertData), then links it to the chat item with feedback/adminUpdate.
 */
let t: TestApp;
let fake: FakeOpenAi;
let ownerToken: string;
let readerToken: string;
let strangerToken: string;
let appId: string;
let datasetId: string;
let collectionId: string;

const CHAT = 'visitor-chat';
const ANSWER = 'visitor-answer';

const adminFeedbackOf = async (dataId: string) => (await t.app.mongo.db.collection('chatitems').findOne({ appId: new ObjectId(appId), chatId: CHAT, dataId }))?.adminFeedback;

/** What the web client does: the corrected pair goes into the dataset first. */
async function annotation(q: string, a: string) {
  const dataId = await ok(t, ownerToken, 'POST', '/core/dataset/data/insertData', { collectionId, q, a });
  return { appId, chatId: CHAT, chatItemId: ANSWER, datasetId, dataId, q, a };
}

beforeAll(async () => {
  ({ t, fake } = await startChatApp());
  const owner = await createUser(t, { username: 'fb-owner', password: 'password-f1' });
  await createUser(t, { username: 'fb-reader', password: 'password-f2', teamId: owner.teamId, role: 'member', permission: 4 });
  await createUser(t, { username: 'fb-stranger', password: 'password-f3' });
  ownerToken = await login(t, 'fb-owner', 'password-f1');
  readerToken = await login(t, 'fb-reader', 'password-f2');
  strangerToken = await login(t, 'fb-stranger', 'password-f3');
  appId = await createPublishedApp(t, ownerToken, 'Support bot', simpleChatGraph);
  await ok(t, ownerToken, 'POST', '/core/app/update', { appId, defaultPermission: 4 });
  datasetId = await ok(t, ownerToken, 'POST', '/core/dataset/create', { name: 'Corrections' });
  collectionId = await ok(t, ownerToken, 'POST', '/core/dataset/collection/create', { datasetId, name: 'Annotated', type: 'virtual' });
  // A visitor's chat through a share link: the one the owner sees in the app logs.
  const shareId = await ok(t, ownerToken, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'Web' });
  const visit = await t.app.inject({
    method: 'POST',
    url: '/api/v1/chat/completions',
    payload: { shareId, outLinkUid: 'visitor-1', chatId: CHAT, responseChatItemId: ANSWER, messages: [{ role: 'user', content: 'When do you open?', dataId: 'visitor-question' }] },
  });
  expect(visit.statusCode, visit.body).toBe(200);
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('core/chat/feedback/adminUpdate', () => {
  it('stores the annotation on the answer as the 4.8.10 web client sends it; init and the logs show it', async () => {
    const body = await annotation('When do you open?', 'We open at 9 every weekday.');
    expect(await ok(t, ownerToken, 'POST', '/core/chat/feedback/adminUpdate', body)).toBeNull();
    expect(await adminFeedbackOf(ANSWER)).toEqual({ datasetId, dataId: body.dataId, q: body.q, a: body.a });
    const init = await ok(t, ownerToken, 'GET', '/core/chat/init', { appId, chatId: CHAT });
    expect(init.history.find((item: { dataId: string }) => item.dataId === ANSWER).adminFeedback).toEqual({ datasetId, dataId: body.dataId, q: body.q, a: body.a });
    const logs = await ok(t, ownerToken, 'POST', '/core/app/getChatLogs', { appId, pageSize: 10 });
    expect(logs.data.find((log: { id: string }) => log.id === CHAT)).toMatchObject({ markCount: 1 });
  });

  it('reads the 4.8.12 names too (dataId = the chat item, feedbackDataId = the dataset entry)', async () => {
    const body = await annotation('When do you open?', 'From 9 to 17.');
    const res = await call(t, ownerToken, 'POST', '/core/chat/feedback/adminUpdate', { appId, chatId: CHAT, dataId: ANSWER, feedbackDataId: body.dataId, datasetId, q: body.q, a: body.a });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(await adminFeedbackOf(ANSWER)).toMatchObject({ dataId: body.dataId, a: 'From 9 to 17.' });
  });

  it('refuses members without manage on the app, other teams and API keys, changing nothing', async () => {
    const before = await adminFeedbackOf(ANSWER);
    const body = { appId, chatId: CHAT, chatItemId: ANSWER, datasetId, dataId: new ObjectId().toHexString(), q: 'taken over' };
    const reader = await call(t, readerToken, 'POST', '/core/chat/feedback/adminUpdate', body);
    expect(reader.status, JSON.stringify(reader.body)).toBe(403);
    const stranger = await call(t, strangerToken, 'POST', '/core/chat/feedback/adminUpdate', body);
    expect(stranger.status).toBe(403);
    const key = await createApiKey(t, ownerToken, { name: 'global' });
    const viaKey = await t.app.inject({ method: 'POST', url: '/api/core/chat/feedback/adminUpdate', headers: apiKeyHeaders(key), payload: body });
    expect([401, 403]).toContain(viaKey.statusCode);
    // A dataset of another team cannot be named.
    const foreignDataset = await ok(t, strangerToken, 'POST', '/core/dataset/create', { name: 'Elsewhere' });
    const foreign = await call(t, ownerToken, 'POST', '/core/chat/feedback/adminUpdate', { ...body, datasetId: foreignDataset });
    expect(foreign.status).toBe(403);
    expect(foreign.body.statusText).toBe('unAuthDataset');
    expect(await adminFeedbackOf(ANSWER)).toEqual(before);
  });

  it('answers 400 for missing fields and 404 for an unknown chat item', async () => {
    const body = { appId, chatId: CHAT, chatItemId: ANSWER, datasetId, dataId: new ObjectId().toHexString(), q: 'question' };
    for (const [field, pattern] of [
      ['q', /q/],
      ['chatItemId', /chatItemId/],
      ['dataId', /dataId/],
      ['datasetId', /datasetId/],
    ] as const) {
      const { [field]: _dropped, ...rest } = body;
      const res = await call(t, ownerToken, 'POST', '/core/chat/feedback/adminUpdate', rest);
      expect(res.status, field).toBe(400);
      expect(res.body.message).toMatch(pattern);
    }
    const entry = await annotation('question', 'answer');
    const missing = await call(t, ownerToken, 'POST', '/core/chat/feedback/adminUpdate', { ...body, dataId: entry.dataId, chatItemId: 'no-such-item' });
    expect(missing.status).toBe(404);
    expect(missing.body.message).toMatch(/no-such-item/);
  });

  it('the entry must be one the caller can read, in the dataset and collection named; nothing changes otherwise', async () => {
    const before = await adminFeedbackOf(ANSWER);
    const body = { appId, chatId: CHAT, chatItemId: ANSWER, datasetId, collectionId, q: 'pointing elsewhere' };
    // An entry of another dataset of the owner's, named as if it were in this one.
    const otherDataset = await ok(t, ownerToken, 'POST', '/core/dataset/create', { name: 'Other corrections' });
    const otherCollection = await ok(t, ownerToken, 'POST', '/core/dataset/collection/create', { datasetId: otherDataset, name: 'Other', type: 'virtual' });
    const elsewhere = await ok(t, ownerToken, 'POST', '/core/dataset/data/insertData', { collectionId: otherCollection, q: 'other entry' });
    const misplaced = await call(t, ownerToken, 'POST', '/core/chat/feedback/adminUpdate', { ...body, dataId: elsewhere });
    expect(misplaced.status).toBe(400);
    expect(misplaced.body.message).toMatch(/feedbackDataId/);
    // An entry of another team.
    const strangerDataset = await ok(t, strangerToken, 'POST', '/core/dataset/create', { name: 'Stranger corrections' });
    const strangerCollection = await ok(t, strangerToken, 'POST', '/core/dataset/collection/create', { datasetId: strangerDataset, name: 'S', type: 'virtual' });
    const foreignEntry = await ok(t, strangerToken, 'POST', '/core/dataset/data/insertData', { collectionId: strangerCollection, q: 'stranger entry' });
    expect((await call(t, ownerToken, 'POST', '/core/chat/feedback/adminUpdate', { ...body, dataId: foreignEntry })).status).toBe(403);
    // No such entry.
    expect((await call(t, ownerToken, 'POST', '/core/chat/feedback/adminUpdate', { ...body, dataId: new ObjectId().toHexString() })).status).toBe(404);
    expect(await adminFeedbackOf(ANSWER)).toEqual(before);
  });
});
