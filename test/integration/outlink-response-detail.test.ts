import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { createUser, login } from '../helpers/platform.js';
import { ok } from './apps-helpers.js';
import { chain, createPublishedApp, searchGraph, sseFrames, startChatApp } from './chat-helpers.js';

/**
 * A share link's `responseDetail` is its owner's switch for "quotes and details reach visitors".
 * Off, a visitor gets no node responses on any route: the stream sends no flowResponses frame,
 * the non-stream answer's responseData is empty, getResData answers none. On, they get the public
 * filter (the dataset quotes among it).
 */
let t: TestApp;
let fake: FakeOpenAi;
let appId: string;
let hiddenShareId: string;
let shownShareId: string;
let pluginId: string;
let pluginShareId: string;

const QUOTE = 'The internal wifi password is tulip-42.';

/** A plugin app: its inputs straight to its outputs. */
const echoPlugin = {
  nodes: [
    { nodeId: 'pin', flowNodeType: 'pluginInput', name: 'Inputs', inputs: [{ key: 'who', valueType: 'string', required: true }], outputs: [{ id: 'who', key: 'who', valueType: 'string' }] },
    { nodeId: 'pout', flowNodeType: 'pluginOutput', name: 'Outputs', inputs: [{ key: 'who', valueType: 'string', value: ['pin', 'who'] }], outputs: [] },
  ],
  edges: [{ source: 'pin', sourceHandle: 'pin-source-right', target: 'pout', targetHandle: 'pout-target-left' }],
  chatConfig: {},
};

const completion = (shareId: string, chatId: string, stream: boolean, responseChatItemId?: string) =>
  t.app.inject({
    method: 'POST',
    url: '/api/v1/chat/completions',
    payload: { shareId, outLinkUid: 'v1', chatId, detail: true, stream, responseChatItemId, messages: [{ role: 'user', content: 'wifi password' }] },
  });

const resData = (shareId: string, chatId: string, dataId: string, app = appId) =>
  t.app.inject({ method: 'GET', url: `/api/core/chat/getResData?shareId=${shareId}&outLinkUid=v1&appId=${app}&chatId=${chatId}&dataId=${dataId}` });

beforeAll(async () => {
  ({ t, fake } = await startChatApp());
  await createUser(t, { username: 'detail-owner', password: 'password-d1' });
  const token = await login(t, 'detail-owner', 'password-d1');
  const datasetId = await ok(t, token, 'POST', '/core/dataset/create', { name: 'Internal' });
  const collectionId = await ok(t, token, 'POST', '/core/dataset/collection/create', { datasetId, name: 'internal-notes.pdf', type: 'virtual' });
  await ok(t, token, 'POST', '/core/dataset/data/insertData', { collectionId, q: QUOTE });
  await t.app.datasets.trainingWorker.drain();
  const search = searchGraph([{ datasetId }]).nodes[1]!;
  appId = await createPublishedApp(t, token, 'Guarded bot', chain(search, { nodeId: 'ans', flowNodeType: 'answerNode', name: 'Answer', inputs: [{ key: 'text', value: 'I cannot tell you that.' }], outputs: [] }));
  hiddenShareId = await ok(t, token, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'No detail', responseDetail: false });
  shownShareId = await ok(t, token, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'Detail', responseDetail: true });
  pluginId = await createPublishedApp(t, token, 'Echo plugin', echoPlugin, 'plugin');
  pluginShareId = await ok(t, token, 'POST', '/support/outLink/create', { appId: pluginId, type: 'share', name: 'Plugin', responseDetail: false });
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('a share link with responseDetail off', () => {
  it('streams no flowResponses', async () => {
    const res = await completion(hiddenShareId, 'h-stream', true);
    expect(res.statusCode).toBe(200);
    expect(sseFrames(res.body).some((frame) => frame.event === 'flowResponses')).toBe(false);
    expect(res.body).not.toContain('tulip-42');
  });

  it('answers without stream with no node responses, quotes included', async () => {
    const res = await completion(hiddenShareId, 'h-json', false, 'h-answer');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().responseData).toEqual([]);
    expect(res.body).not.toContain('tulip-42');
    expect(res.body).not.toContain('internal-notes.pdf');
  });

  it('gives no node responses through getResData', async () => {
    const res = await resData(hiddenShareId, 'h-json', 'h-answer');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toEqual([]);
    expect(res.body).not.toContain('tulip-42');
  });
});

describe('a share link with responseDetail on', () => {
  it('gives the quotes on the stream, the non-stream answer and getResData', async () => {
    const streamed = await completion(shownShareId, 's-stream', true);
    const frame = sseFrames(streamed.body).find((f) => f.event === 'flowResponses');
    expect(JSON.parse(frame!.data)[0].quoteList[0]).toMatchObject({ q: QUOTE, sourceName: 'internal-notes.pdf' });

    const res = await completion(shownShareId, 's-json', false, 's-answer');
    expect(res.statusCode, res.body).toBe(200);
    const [search] = res.json().responseData;
    expect(search).toMatchObject({ moduleType: 'datasetSearchNode', quoteList: [{ q: QUOTE, sourceName: 'internal-notes.pdf' }] });
    // The public filter: no query, model or timing details.
    expect(Object.keys(search).sort()).toEqual(['moduleType', 'quoteList']);

    const read = await resData(shownShareId, 's-json', 's-answer');
    expect(read.statusCode, read.body).toBe(200);
    expect(read.json().data).toEqual(res.json().responseData);
  });
});

describe("a plugin app's share link with responseDetail off", () => {
  it('still gives the plugin output (its answer), on the non-stream answer and getResData', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/chat/completions',
      payload: { shareId: pluginShareId, outLinkUid: 'v1', chatId: 'p-json', responseChatItemId: 'p-answer', variables: { who: 'Ada' }, messages: [] },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().responseData).toEqual([{ moduleType: 'pluginOutput', pluginOutput: { who: 'Ada' } }]);
    const read = await resData(pluginShareId, 'p-json', 'p-answer', pluginId);
    expect(read.statusCode, read.body).toBe(200);
    expect(read.json().data).toEqual(res.json().responseData);
  });
});
