import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMongo, type Mongo } from '../../src/infra/mongo.js';
import { type ChatRepo, createChatRepo } from '../../src/platform/chat/chat.repo.js';
import type { ChatFilesRepo } from '../../src/platform/chat/chat-files.repo.js';
import { freshDatabaseUri, type TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { holdModelCalls } from '../helpers/held-model-calls.js';
import { createUser, login } from '../helpers/platform.js';
import { ok } from './apps-helpers.js';
import { createPublishedApp, selectGraph, startChatApp } from './chat-helpers.js';

/**
 * Writes of one stored answer item at once (custom feedbacks appended by the customFeedback
 * plugin, closed by a user, thumbs, an interactive continuation's answer) on the real FerretDB,
 * which applies every update as read-then-write of the whole document: none undoes another.
 */
let mongo: Mongo;
let repo: ChatRepo;
const teamId = new ObjectId().toHexString();
const appId = new ObjectId().toHexString();

async function storedItem(chatId: string, fields: Record<string, unknown>): Promise<ObjectId> {
  const _id = new ObjectId();
  await mongo.db.collection('chatitems').insertOne({ _id, teamId: new ObjectId(teamId), tmbId: new ObjectId(), appId: new ObjectId(appId), chatId, dataId: 'd', obj: 'AI', time: new Date(), value: [], ...fields });
  return _id;
}
const itemOf = (_id: ObjectId) => mongo.db.collection('chatitems').findOne({ _id });

beforeAll(() => {
  mongo = createMongo(freshDatabaseUri());
  repo = createChatRepo(mongo.db, {} as ChatFilesRepo);
});
afterAll(async () => {
  await mongo.db.dropDatabase().catch(() => undefined);
  await mongo.client.close();
});

describe('custom feedbacks written at once', () => {
  it('parallel appends and closes: every append stays, every close removes one entry', async () => {
    const old = Array.from({ length: 12 }, (_, i) => `old-${i}`);
    const added = Array.from({ length: 12 }, (_, i) => `new-${i}`);
    const id = await storedItem('appends-closes', { customFeedbacks: old });
    const writes = added.flatMap((text) => [repo.appendCustomFeedback(teamId, appId, 'appends-closes', 'd', text), repo.closeCustomFeedback(appId, 'appends-closes', 'd', 0)]);
    expect(await Promise.all(writes)).toEqual(writes.map(() => true));
    // Closes of entry 0 take the old entries (they stay in front): exactly the new ones are left.
    expect([...((await itemOf(id))?.customFeedbacks ?? [])].sort()).toEqual([...added].sort());
  });

  it('a close racing an append, one pair at a time, keeps the append and the close', async () => {
    for (let i = 0; i < 10; i++) {
      const chatId = `pair-${i}`;
      const id = await storedItem(chatId, { customFeedbacks: ['A', 'B'] });
      await Promise.all([repo.closeCustomFeedback(appId, chatId, 'd', 0), repo.appendCustomFeedback(teamId, appId, chatId, 'd', 'C')]);
      expect((await itemOf(id))?.customFeedbacks).toEqual(['B', 'C']);
    }
  });

  it('thumbs and annotations set meanwhile do not undo appended feedbacks (nor the other way)', async () => {
    const id = await storedItem('thumbs', { customFeedbacks: [] });
    const texts = Array.from({ length: 10 }, (_, i) => `t-${i}`);
    await Promise.all([
      ...texts.map((text) => repo.appendCustomFeedback(teamId, appId, 'thumbs', 'd', text)),
      ...texts.map((_, i) => repo.setFeedback(appId, 'thumbs', 'd', `good-${i}`, undefined)),
      repo.setAdminFeedback(appId, 'thumbs', 'd', { datasetId: 'ds', dataId: 'x', q: 'q' }),
    ]);
    const item = await itemOf(id);
    expect([...(item?.customFeedbacks ?? [])].sort()).toEqual([...texts].sort());
    expect(item?.userGoodFeedback).toMatch(/^good-\d$/);
    expect(item?.adminFeedback).toMatchObject({ datasetId: 'ds', q: 'q' });
  });

  it('an item that is not there: false, nothing written', async () => {
    expect(await repo.appendCustomFeedback(teamId, appId, 'none', 'd', 'X')).toBe(false);
    expect(await repo.closeCustomFeedback(appId, 'none', 'd', 0)).toBe(false);
    expect(await mongo.db.collection('chatitems').countDocuments({ chatId: 'none' })).toBe(0);
  });
});

describe('an interactive continuation saved', () => {
  const asked = { type: 'interactive', interactive: { type: 'userSelect', params: { description: 'Go?', userSelectOptions: [] } } };
  const text = (content: string) => ({ type: 'text', text: { content } });

  it('appends to the item as stored now, with feedbacks appended and closed at the same time', async () => {
    const id = await storedItem('continued', { value: [text('before'), asked], responseData: [{ nodeId: 'sel' }], customFeedbacks: ['A', 'B'] });
    await Promise.all([
      repo.appendContinuation({ _id: id.toHexString(), appId, chatId: 'continued', dataId: 'd' }, 1, 'Confirm', { value: [text('after')] as never, responseData: [{ nodeId: 'yes' }], customFeedbacks: ['F'] }),
      repo.appendCustomFeedback(teamId, appId, 'continued', 'd', 'C'),
      repo.closeCustomFeedback(appId, 'continued', 'd', 0),
    ]);
    const item = await itemOf(id);
    expect([...(item?.customFeedbacks ?? [])].sort()).toEqual(['B', 'C', 'F']);
    expect(item?.value).toEqual([text('before'), { ...asked, interactive: { ...asked.interactive, params: { ...asked.interactive.params, userSelectedVal: 'Confirm' } } }, text('after')]);
    expect(item?.responseData).toEqual([{ nodeId: 'sel' }, { nodeId: 'yes' }]);
  });

  it('a second continuation of the same node adds its answer after the first and keeps its selection', async () => {
    const id = await storedItem('twice', { value: [asked] });
    await repo.appendContinuation({ _id: id.toHexString(), appId, chatId: 'twice', dataId: 'd' }, 0, 'Confirm', { value: [text('first')] as never, responseData: [], customFeedbacks: [] });
    await repo.appendContinuation({ _id: id.toHexString(), appId, chatId: 'twice', dataId: 'd' }, 0, 'Cancel', { value: [text('second')] as never, responseData: [], customFeedbacks: [] });
    const item = await itemOf(id);
    expect(item?.value.map((v: { type: string }) => v.type)).toEqual(['interactive', 'text', 'text']);
    expect(item?.value[0].interactive.params.userSelectedVal).toBe('Confirm');
    expect(item?.value.slice(1)).toEqual([text('first'), text('second')]);
  });
});

describe('continuations over HTTP while their run is held', () => {
  let t: TestApp;
  let fake: FakeOpenAi;
  let shareId: string;
  let chatAppId: string;
  // The userSelect, then on Confirm a model call (held by the test) answering the chat.
  const graph = {
    ...selectGraph,
    nodes: [
      ...selectGraph.nodes.filter((node) => node.nodeId !== 'yes'),
      {
        nodeId: 'yes',
        flowNodeType: 'chatNode',
        name: 'AI chat',
        inputs: [
          { key: 'model', value: 'fake-llm' },
          { key: 'systemPrompt', value: '' },
          { key: 'history', value: 0, valueType: 'chatHistory' },
          { key: 'userChatInput', value: 'ask cont-1', valueType: 'string' },
        ],
        outputs: [{ id: 'answerText', key: 'answerText', valueType: 'string' }],
      },
    ],
  };
  const turn = (chatId: string, content: string) =>
    t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', payload: { shareId, outLinkUid: 'visitor', chatId, messages: [{ role: 'user', content }] } });
  const aiItem = (chatId: string) => t.app.mongo.db.collection('chatitems').findOne({ appId: new ObjectId(chatAppId), chatId, obj: 'AI' });
  /** Starts a chat stopped at the userSelect; answers its AI item's dataId and team. */
  async function askedChat(chatId: string) {
    const res = await turn(chatId, 'start');
    expect(res.statusCode, res.body).toBe(200);
    const item = await aiItem(chatId);
    if (!item) throw new Error(`no answer item in ${chatId}`);
    expect(item.value.at(-1)?.type).toBe('interactive');
    return { dataId: item.dataId as string, teamId: (item.teamId as ObjectId).toHexString() };
  }
  /** Resolves once `count` model calls wait at the held route. */
  async function heldCalls(model: ReturnType<typeof holdModelCalls>, count: number) {
    while (model.held.length < count) await new Promise((resolve) => setImmediate(resolve));
  }

  beforeAll(async () => {
    ({ t, fake } = await startChatApp());
    await createUser(t, { username: 'feedback-racer', password: 'password-f1' });
    const token = await login(t, 'feedback-racer', 'password-f1');
    chatAppId = await createPublishedApp(t, token, 'Select then ask', graph);
    shareId = await ok(t, token, 'POST', '/support/outLink/create', { appId: chatAppId, type: 'share', name: 'Race link' });
  });
  afterAll(async () => {
    await t?.close();
    await fake?.close();
  });

  it('a feedback closed and one appended during the run stay so once the answer is saved', async () => {
    const { dataId, teamId: team } = await askedChat('held-feedbacks');
    const chatRepo = t.app.chat.testing.repo;
    expect(await chatRepo.appendCustomFeedback(team, chatAppId, 'held-feedbacks', dataId, 'A')).toBe(true);
    const model = holdModelCalls(fake);
    try {
      const continued = turn('held-feedbacks', 'Confirm');
      await heldCalls(model, 1);
      expect(await chatRepo.closeCustomFeedback(chatAppId, 'held-feedbacks', dataId, 0)).toBe(true);
      expect(await chatRepo.appendCustomFeedback(team, chatAppId, 'held-feedbacks', dataId, 'B')).toBe(true);
      model.release('cont-1');
      expect((await continued).statusCode).toBe(200);
    } finally {
      model.releaseAll();
    }
    const item = await aiItem('held-feedbacks');
    expect(item?.customFeedbacks).toEqual(['B']);
    expect(JSON.stringify(item?.value)).toContain('answer to cont-1');
  });

  it('a double-submitted continuation keeps both streamed answers', async () => {
    await askedChat('double');
    const model = holdModelCalls(fake);
    try {
      const first = turn('double', 'Confirm');
      const second = turn('double', 'Confirm');
      await heldCalls(model, 2);
      // Both read the item before either saved; which call is whose is not known, so both go.
      model.release('cont-1');
      model.release('cont-1');
      expect((await Promise.all([first, second])).map((res) => res.statusCode)).toEqual([200, 200]);
    } finally {
      model.releaseAll();
    }
    const value = ((await aiItem('double'))?.value ?? []) as { type: string; text?: { content: string } }[];
    expect(value.filter((v) => v.type === 'text' && v.text?.content.includes('answer to cont-1'))).toHaveLength(2);
    expect(value[0]).toMatchObject({ type: 'interactive', interactive: { params: { userSelectedVal: 'Confirm' } } });
  });
});
