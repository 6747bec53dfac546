import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selfCallHeaders } from '../../src/infra/self-call-token.js';
import type { TestApp } from '../helpers/app.js';
import { commandsDuring } from '../helpers/command-counter.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { createPublishedApp, startChatApp } from './chat-helpers.js';

let t: TestApp;
let fake: FakeOpenAi;
let tok: string;
let appId: string;

/** start → an HTTP node calling the customFeedback plugin by its relative URL (FastGPT's template) → an answer. */
const feedbackGraph = {
  nodes: [
    { nodeId: 'start', flowNodeType: 'workflowStart', name: 'Start', inputs: [], outputs: [{ id: 'userChatInput', key: 'userChatInput' }] },
    {
      nodeId: 'fb',
      flowNodeType: 'httpRequest468',
      name: 'Custom feedback',
      inputs: [
        { key: 'system_httpMethod', value: 'POST' },
        { key: 'system_httpReqUrl', value: '/api/plugins/customFeedback/v2' },
        { key: 'system_httpContentType', value: 'json' },
        { key: 'system_httpJsonBody', value: '{"appId":"{{appId}}","chatId":"{{chatId}}","responseChatItemId":"{{responseChatItemId}}","customFeedback":"asked: {{$start.userChatInput$}}"}' },
      ],
      outputs: [{ id: 'httpRawResponse', key: 'httpRawResponse', type: 'static' }],
    },
    { nodeId: 'ans', flowNodeType: 'answerNode', name: 'Answer', inputs: [{ key: 'text', value: 'noted' }], outputs: [] },
  ],
  edges: [
    { source: 'start', sourceHandle: 'start-source-right', target: 'fb', targetHandle: 'fb-target-left' },
    { source: 'fb', sourceHandle: 'fb-source-right', target: 'ans', targetHandle: 'ans-target-left' },
  ],
  chatConfig: {},
};

const answerItem = (chatId: string) => t.app.mongo.db.collection('chatitems').findOne({ chatId, obj: 'AI' });

/**
 * Runs one turn of the feedback app. The feedback must travel with the turn's insert of its answer
 * item: a separate update of the item, sent while the item does not exist yet, misses it and
 * leaves the text to a 60 s timer of this process (lost if it stops first).
 */
async function runTurn(chatId: string, question: string): Promise<void> {
  const commands = await commandsDuring(t.app, async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/chat/completions',
      headers: authHeaders(tok),
      payload: { appId, chatId, responseChatItemId: `${chatId}-answer`, messages: [{ role: 'user', content: question }] },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().choices[0].message.content).toContain('noted');
  });
  expect(commands.filter((c) => c.collection === 'chatitems' && c.name === 'update')).toEqual([]);
}

beforeAll(async () => {
  ({ t, fake } = await startChatApp());
  await createUser(t, { username: 'fb-owner', password: 'password-f1' });
  tok = await login(t, 'fb-owner', 'password-f1');
  appId = await createPublishedApp(t, tok, 'Feedback bot', feedbackGraph);
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('customFeedback called by a running turn through its HTTP node', () => {
  it('is saved on the turn’s answer item with the item, not by a timer', async () => {
    await runTurn('fb-inject', 'first question');
    // Read as soon as the turn answered: a write left to the 60 s retry would not be there.
    const item = await answerItem('fb-inject');
    expect(item).toMatchObject({ dataId: 'fb-inject-answer', customFeedbacks: ['asked: first question'] });
  });

  it('is saved the same way when the call comes over loopback to the listening server', async () => {
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    await runTurn('fb-loopback', 'second question');
    expect((await answerItem('fb-loopback'))?.customFeedbacks).toEqual(['asked: second question']);
  });

  it('a call naming a turn that no longer runs here is written into the stored item (the fallback)', async () => {
    const item = await answerItem('fb-inject');
    const scope = { teamId: String(item?.teamId), appId, chatId: 'fb-inject', dataId: 'fb-inject-answer' };
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/plugins/customFeedback/v2/index',
      headers: selfCallHeaders(t.config.TOKEN_KEY, scope),
      payload: { appId, chatId: scope.chatId, responseChatItemId: scope.dataId, customFeedback: 'later' },
    });
    expect(res.json()).toEqual({ text: 'later' });
    await expect.poll(async () => (await answerItem('fb-inject'))?.customFeedbacks).toContain('later');
  });
});
