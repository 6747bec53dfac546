import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { apiKeyHeaders, authHeaders, createApiKey, createUser, login } from '../helpers/platform.js';
import { call, ok } from './apps-helpers.js';
import { branchGraph, createPublishedApp, selectGraph, simpleChatGraph, sseFrames, startChatApp } from './chat-helpers.js';

let t: TestApp;
let fake: FakeOpenAi;
let tokA: string;
let tokB: string;
let appId: string;
let branchAppId: string;

const completions = (headers: Record<string, string>, payload: Record<string, unknown>) =>
  t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers, payload });

beforeAll(async () => {
  ({ t, fake } = await startChatApp());
  await createUser(t, { username: 'alice', password: 'password-a1' });
  await createUser(t, { username: 'bob', password: 'password-b1' });
  tokA = await login(t, 'alice', 'password-a1');
  tokB = await login(t, 'bob', 'password-b1');
  appId = await createPublishedApp(t, tokA, 'Echo bot', simpleChatGraph);
  branchAppId = await createPublishedApp(t, tokA, 'Branch bot', branchGraph);
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('v1/chat/completions', () => {
  it('answers in the OpenAI shape, saves the turn and loads it as history next time', async () => {
    const first = await completions(authHeaders(tokA), { appId, chatId: 'c1', messages: [{ role: 'user', content: 'hello', dataId: 'q1' }], responseChatItemId: 'a1' });
    expect(first.statusCode, first.body).toBe(200);
    const body = first.json();
    expect(body).toMatchObject({ id: 'c1', model: '', usage: { total_tokens: 1 }, choices: [{ message: { role: 'assistant', content: 'Echo: hello' }, finish_reason: 'stop', index: 0 }] });
    expect(body.responseData).toBeUndefined();

    await completions(authHeaders(tokA), { appId, chatId: 'c1', messages: [{ role: 'user', content: 'again' }] });
    const sent = fake.requests.filter((r) => r.path === '/v1/chat/completions').at(-1)!.body as { messages: { role: string; content: string }[] };
    expect(sent.messages.map((m) => m.content)).toEqual(['Be brief.', 'hello', 'Echo: hello', 'again']);
    expect(fake.requests.at(-1)!.headers.authorization).toBe('Bearer sk-fake');

    const histories = await ok(t, tokA, 'POST', '/core/chat/getHistories', { appId });
    expect(histories).toEqual([expect.objectContaining({ chatId: 'c1', title: 'again', customTitle: '', top: false, appId })]);
    const init = await ok(t, tokA, 'GET', '/core/chat/init', { appId, chatId: 'c1' });
    expect(init.history.map((i: { obj: string; dataId: string }) => `${i.obj}:${i.dataId}`).slice(0, 2)).toEqual(['Human:q1', 'AI:a1']);
    expect(init.history[1]).toMatchObject({ llmModuleAccount: 1, value: [{ type: 'text', text: { content: 'Echo: hello' } }] });
    expect(init.app).toMatchObject({ name: 'Echo bot', chatModels: ['Fake LLM'], chatConfig: { welcomeText: 'Hello there' } });
    // A model the configuration no longer has is left out of chatModels (as the reference).
    const retired = { ...simpleChatGraph, nodes: [...simpleChatGraph.nodes, { nodeId: 'old', flowNodeType: 'chatNode', name: 'Old AI', inputs: [{ key: 'model', value: 'retired-model' }], outputs: [] }] };
    const retiredApp = await createPublishedApp(t, tokA, 'Mixed models', retired);
    expect((await ok(t, tokA, 'GET', '/core/chat/init', { appId: retiredApp })).app.chatModels).toEqual(['Fake LLM']);
  });

  it('without a chatId nothing is saved; detail returns node responses and variables', async () => {
    const res = await completions(authHeaders(tokA), { appId, detail: true, variables: { name: 'Ann' }, messages: [{ role: 'user', content: 'stateless' }] });
    const body = res.json();
    expect(body.id).toBe('');
    expect(body.choices[0].message.content).toBe('Echo: stateless');
    expect(body.responseData.map((r: { moduleType: string }) => r.moduleType)).toEqual(['workflowStart', 'chatNode']);
    expect(body.responseData[1]).toMatchObject({ model: 'Fake LLM', tokens: 15, totalPoints: 1.5 });
    expect(body.newVariables).toMatchObject({ name: 'Ann' });
    expect(await ok(t, tokA, 'POST', '/core/chat/getHistories', { appId })).toHaveLength(1);
  });

  it('streams OpenAI chunks without event names when detail is false', async () => {
    const res = await completions(authHeaders(tokA), { appId, stream: true, messages: [{ role: 'user', content: 'stream me' }] });
    expect(res.headers['content-type']).toContain('text/event-stream');
    const frames = sseFrames(res.body);
    expect(frames.every((f) => f.event === undefined)).toBe(true);
    const text = frames.filter((f) => f.data !== '[DONE]').map((f) => JSON.parse(f.data).choices[0].delta.content ?? '').join('');
    expect(text).toBe('Echo: stream me');
    expect(frames.at(-1)!.data).toBe('[DONE]');
    expect(JSON.parse(frames.at(-2)!.data).choices[0].finish_reason).toBe('stop');
    // The role is named once, in the opening chunk, as OpenAI streams (openai-python's stream
    // helper joins every string field of the deltas: a role in each made it 'assistantassistant…').
    const deltas = frames.filter((f) => f.data !== '[DONE]').map((f) => JSON.parse(f.data).choices[0].delta as { role?: string; content?: string });
    expect(deltas.filter((delta) => delta.role !== undefined)).toEqual([{ role: 'assistant', content: '' }]);
    expect(deltas[0]!.role).toBe('assistant');
    expect(deltas.filter((delta) => delta.content).length).toBeGreaterThan(0);
  });

  it('streams named events with detail, flowResponses after [DONE]', async () => {
    const res = await completions(authHeaders(tokA), { appId, stream: true, detail: true, messages: [{ role: 'user', content: 'x' }] });
    const frames = sseFrames(res.body);
    const names = frames.map((f) => f.event);
    // OpenAI's opening chunk names the role before anything else.
    expect(names[0]).toBe('answer');
    expect(JSON.parse(frames[0]!.data).choices).toEqual([{ delta: { role: 'assistant', content: '' }, index: 0, finish_reason: null }]);
    expect(names[1]).toBe('flowNodeStatus');
    expect(JSON.parse(frames[1]!.data)).toEqual({ status: 'running', name: 'AI chat' });
    const done = frames.findIndex((f) => f.data === '[DONE]');
    expect(frames[done]!.event).toBe('answer');
    expect(frames[done + 1]!.event).toBe('flowResponses');
    expect(JSON.parse(frames[done + 1]!.data)).toHaveLength(2);
  });

  it('runs a workflow app: ifElse branch and answer node with a variable', async () => {
    const vip = await completions(authHeaders(tokA), { appId: branchAppId, variables: { name: 'Zoe' }, messages: [{ role: 'user', content: 'I am vip' }] });
    expect(vip.json().choices[0].message.content).toBe('\nWelcome back Zoe');
    const guest = await completions(authHeaders(tokA), { appId: branchAppId, stream: true, messages: [{ role: 'user', content: 'hello' }] });
    const text = sseFrames(guest.body)
      .filter((f) => f.data !== '[DONE]')
      .map((f) => JSON.parse(f.data).choices[0].delta.content ?? '')
      .join('');
    expect(text).toBe('\nHi guest');
  });

  it('an API key bound to the app needs no appId and is charged; other apps and global keys without appId are refused', async () => {
    const key = await createApiKey(t, tokA, { name: 'bound', appId });
    const res = await completions(apiKeyHeaders(key), { chatId: 'k1', messages: [{ role: 'user', content: 'via key' }] });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().choices[0].message.content).toBe('Echo: via key');
    const keys = await ok(t, tokA, 'GET', '/support/openapi/list', { appId });
    expect(keys[0].usagePoints).toBeCloseTo(1.5);
    await completions(apiKeyHeaders(key), { chatId: 'k2', customUid: 'end-user-9', metadata: { 'plan.tier': 'gold' }, messages: [{ role: 'user', content: 'meta' }] });
    const k2 = await t.app.mongo.db.collection('chats').findOne({ chatId: 'k2' });
    expect(k2).toMatchObject({ source: 'api', outLinkUid: 'end-user-9' });
    await t.app.identity.usage.drain();
    const usage = await t.app.mongo.db.collection('usages').find({ source: 'api' }).toArray();
    expect(usage.slice(0, 1)).toEqual([expect.objectContaining({ appName: 'Echo bot', totalPoints: 1.5, list: [expect.objectContaining({ moduleName: 'AI chat', model: 'Fake LLM', tokens: 15 })] })]);
    const histories = await t.app.inject({ method: 'POST', url: '/api/core/chat/getHistories', headers: apiKeyHeaders(key), payload: { appId } });
    expect(histories.json().data.map((h: { chatId: string }) => h.chatId).sort()).toEqual(['k1', 'k2']);

    // As the reference: a bound key runs its own app whatever appId the body names.
    const other = await completions(apiKeyHeaders(key), { appId: branchAppId, messages: [{ role: 'user', content: 'x' }] });
    expect(other.statusCode, other.body).toBe(200);
    expect(other.json().choices[0].message.content).toBe('Echo: x');
    const global = await createApiKey(t, tokA, { name: 'global' });
    const noApp = await completions(apiKeyHeaders(global), { messages: [{ role: 'user', content: 'x' }] });
    expect(noApp.statusCode).toBe(400);
    expect(noApp.json().message).toMatch(/app key/);
  });

  it('refuses another team and bad input, naming the field', async () => {
    const cross = await completions(authHeaders(tokB), { appId, messages: [{ role: 'user', content: 'x' }] });
    expect(cross.statusCode).toBe(403);
    expect(cross.json().statusText).toBe('unAuthApp');
    const crossChat = await call(t, tokB, 'PUT', '/core/chat/updateHistory', { appId, chatId: 'c1', customTitle: 'mine' });
    expect(crossChat.status).toBe(403);

    const cases: [Record<string, unknown>, RegExp][] = [
      [{ appId, messages: 'hi' }, /messages/],
      [{ appId, messages: [{ role: 'robot', content: 'x' }] }, /role/],
      [{ appId, chatId: 'x'.repeat(300), messages: [{ role: 'user', content: 'x' }] }, /chatId/],
      [{ appId: 'nope', messages: [{ role: 'user', content: 'x' }] }, /appId/],
      [{ appId, messages: [] }, /messages is empty/],
      [{ messages: [{ role: 'user', content: 'x' }] }, /appId/],
    ];
    for (const [payload, message] of cases) {
      const res = await completions(authHeaders(tokA), payload);
      expect(res.statusCode, JSON.stringify(payload).slice(0, 80)).toBe(400);
      expect(res.json().message).toMatch(message);
    }
    const unauth = await completions({}, { appId, messages: [{ role: 'user', content: 'x' }] });
    expect(unauth.statusCode).toBe(401);
  });
});

describe('chat records', () => {
  it('feedback sets and clears, rename and pin, item delete, getResData, delete and clear', async () => {
    await ok(t, tokA, 'POST', '/core/chat/feedback/updateUserFeedback', { appId, chatId: 'c1', chatItemId: 'a1', userGoodFeedback: 'yes' });
    let init = await ok(t, tokA, 'GET', '/core/chat/init', { appId, chatId: 'c1' });
    expect(init.history[1].userGoodFeedback).toBe('yes');
    await ok(t, tokA, 'POST', '/core/chat/feedback/updateUserFeedback', { appId, chatId: 'c1', chatItemId: 'a1', userBadFeedback: 'wrong' });
    init = await ok(t, tokA, 'GET', '/core/chat/init', { appId, chatId: 'c1' });
    expect(init.history[1].userGoodFeedback).toBeUndefined();
    expect(init.history[1].userBadFeedback).toBe('wrong');
    expect((await call(t, tokA, 'POST', '/core/chat/feedback/updateUserFeedback', { appId, chatId: 'c1' })).status).toBe(400);
    expect((await call(t, tokB, 'POST', '/core/chat/feedback/updateUserFeedback', { appId, chatId: 'c1', chatItemId: 'a1', userGoodFeedback: 'x' })).status).toBe(403);

    const res = await ok(t, tokA, 'GET', '/core/chat/getResData', { appId, chatId: 'c1', dataId: 'a1' });
    expect(res.map((r: { moduleType: string }) => r.moduleType)).toEqual(['workflowStart', 'chatNode']);
    expect(await ok(t, tokA, 'GET', '/core/chat/getResData', { appId, chatId: 'c1', dataId: 'q1' })).toEqual({});

    await ok(t, tokA, 'PUT', '/core/chat/updateHistory', { appId, chatId: 'c1', customTitle: 'Renamed', top: true });
    const [first] = await ok(t, tokA, 'POST', '/core/chat/getHistories', { appId });
    expect(first).toMatchObject({ chatId: 'c1', customTitle: 'Renamed', top: true });

    await ok(t, tokA, 'DELETE', '/core/chat/item/delete', { appId, chatId: 'c1', contentId: 'q1' });
    init = await ok(t, tokA, 'GET', '/core/chat/init', { appId, chatId: 'c1' });
    expect(init.history.some((i: { dataId: string }) => i.dataId === 'q1')).toBe(false);

    await ok(t, tokA, 'DELETE', '/core/chat/delHistory', { appId, chatId: 'c1' });
    expect(await ok(t, tokA, 'POST', '/core/chat/getHistories', { appId })).toEqual([]);
    await completions(authHeaders(tokA), { appId, chatId: 'c2', messages: [{ role: 'user', content: 'one more' }] });
    await ok(t, tokA, 'DELETE', '/core/chat/clearHistories', { appId });
    expect(await ok(t, tokA, 'POST', '/core/chat/getHistories', { appId })).toEqual([]);
  });

  it('interactive userSelect stops and resumes on the same chat', async () => {
    const selectApp = await createPublishedApp(t, tokA, 'Select bot', selectGraph);
    const first = (await completions(authHeaders(tokA), { appId: selectApp, chatId: 's1', detail: true, messages: [{ role: 'user', content: 'start' }] })).json();
    expect(first.choices[0].message.content).toEqual([expect.objectContaining({ type: 'interactive' })]);
    const second = (await completions(authHeaders(tokA), { appId: selectApp, chatId: 's1', messages: [{ role: 'user', content: 'Confirm' }] })).json();
    expect(second.choices[0].message.content).toBe('\nDone: Confirm');
    const init = await ok(t, tokA, 'GET', '/core/chat/init', { appId: selectApp, chatId: 's1' });
    expect(init.history).toHaveLength(2);
    expect(init.history[1].value[0].interactive.params.userSelectedVal).toBe('Confirm');

    // A state handed out in a chat resumes in that chat only (interactive-seal.ts).
    const inChat = first.choices[0].message.content[0].interactive;
    const elsewhere = await completions(authHeaders(tokA), { appId: selectApp, messages: [{ role: 'user', content: 'start' }, { role: 'assistant', content: '', interactive: inChat }, { role: 'user', content: 'Confirm' }] });
    expect(elsewhere.statusCode).toBe(400);
    // Without a chat, a client sends the question back in the history: it resumes from there.
    const asked = (await completions(authHeaders(tokA), { appId: selectApp, detail: true, messages: [{ role: 'user', content: 'start' }] })).json().choices[0].message.content[0].interactive;
    const stateless = await completions(authHeaders(tokA), {
      appId: selectApp,
      messages: [{ role: 'user', content: 'start' }, { role: 'assistant', content: '', interactive: asked }, { role: 'user', content: 'Confirm' }],
    });
    expect(stateless.json().choices[0].message.content).toBe('\nDone: Confirm');
    // The state carries this service's seal; a client that rebuilt it with its keys in another order still resumes.
    expect(asked.seal).toEqual(expect.any(String));
    const reordered = { ...asked, memoryEdges: asked.memoryEdges.map((edge: Record<string, unknown>) => Object.fromEntries(Object.entries(edge).reverse())) };
    const resumed = await completions(authHeaders(tokA), { appId: selectApp, messages: [{ role: 'user', content: 'start' }, { role: 'assistant', content: '', interactive: reordered }, { role: 'user', content: 'Confirm' }] });
    expect(resumed.json().choices[0].message.content).toBe('\nDone: Confirm');
    // A state this app did not hand out is not resumed: entering another node, outputs of the
    // caller's making, no seal. (The reference resumes from whatever the messages hold.)
    const yesOnly = { ...asked, entryNodeIds: ['yes'] };
    const madeUpOutputs = { ...asked, nodeOutputs: [{ nodeId: 'sel', key: 'selectResult', value: 'whatever I like' }] };
    const unsealed = { ...asked, seal: undefined };
    for (const forged of [yesOnly, madeUpOutputs, unsealed]) {
      const refused = await completions(authHeaders(tokA), { appId: selectApp, messages: [{ role: 'user', content: 'start' }, { role: 'assistant', content: '', interactive: forged }, { role: 'user', content: 'Confirm' }] });
      expect(refused.statusCode, JSON.stringify(forged)).toBe(400);
      expect(refused.json().message).toMatch(/interactive state in messages was not answered by this app/);
    }
    // The editor's debug chat runs the graph its caller sent: a state of its own is resumed.
    const debug = await t.app.inject({
      method: 'POST',
      url: '/api/core/chat/chatTest',
      headers: authHeaders(tokA),
      payload: { appId: selectApp, nodes: selectGraph.nodes, edges: selectGraph.edges, messages: [{ role: 'user', content: 'start' }, { role: 'assistant', content: '', interactive: unsealed }, { role: 'user', content: 'Confirm' }] },
    });
    expect(debug.statusCode).toBe(200);
    expect(debug.body).toContain('Done: Confirm');
    // A made-up one is a 400 naming it, not a crash of the resume.
    for (const forged of [{}, { type: 'userSelect' }, { ...asked, entryNodeIds: 'sel' }, { ...asked, memoryEdges: [null] }]) {
      const refused = await completions(authHeaders(tokA), { appId: selectApp, messages: [{ role: 'user', content: 'start' }, { role: 'assistant', content: '', interactive: forged }, { role: 'user', content: 'Confirm' }] });
      expect(refused.statusCode, JSON.stringify(forged)).toBe(400);
      expect(refused.json().message).toMatch(/^Invalid field 'messages\.1\.interactive/);
    }
  });

  it('reads two user messages in a row as one question, and runs a turn whose question is empty (as the reference)', async () => {
    const echo = await createPublishedApp(t, tokA, 'Question echo', {
      nodes: [
        { nodeId: 'start', flowNodeType: 'workflowStart', name: 'Start', inputs: [], outputs: [{ id: 'userChatInput', key: 'userChatInput', valueType: 'string' }] },
        { nodeId: 'say', flowNodeType: 'answerNode', name: 'Say', inputs: [{ key: 'text', value: 'heard [{{$start.userChatInput$}}]' }], outputs: [] },
      ],
      edges: [{ source: 'start', sourceHandle: 'start-source-right', target: 'say', targetHandle: 'say-target-left' }],
      chatConfig: {},
    });
    const merged = await completions(authHeaders(tokA), { appId: echo, messages: [{ role: 'user', content: 'Translate to French:' }, { role: 'user', content: 'good morning' }] });
    expect(merged.statusCode, merged.body).toBe(200);
    expect(merged.json().choices[0].message.content).toContain('Translate to French:');
    expect(merged.json().choices[0].message.content).toContain('good morning');

    const empty = await completions(authHeaders(tokA), { appId: echo, chatId: 'empty-q', messages: [{ role: 'user', content: '' }] });
    expect(empty.statusCode, empty.body).toBe(200);
    expect(empty.json().choices[0].message.content).toBe('\nheard []');
    const init = await ok(t, tokA, 'GET', '/core/chat/init', { appId: echo, chatId: 'empty-q' });
    expect(init.history[0]).toMatchObject({ obj: 'Human', value: [{ type: 'text', text: { content: '' } }] });
  });

  it('chatTest streams the unsaved graph; workflow/debug runs one step', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/core/chat/chatTest',
      headers: authHeaders(tokA),
      payload: { appId, nodes: branchGraph.nodes, edges: branchGraph.edges, variables: { name: 'Tess' }, messages: [{ role: 'user', content: 'vip here' }] },
    });
    const frames = sseFrames(res.body);
    expect(frames.find((f) => f.event === 'fastAnswer')!.data).toContain('Welcome back Tess');
    expect(frames.at(-1)!.event).toBe('flowResponses');
    expect(await ok(t, tokA, 'POST', '/core/chat/getHistories', { appId })).toEqual([]);

    const nodes = branchGraph.nodes.map((n) => ({ ...n, isEntry: n.nodeId === 'start' }));
    const edges = branchGraph.edges.map((e) => ({ ...e, status: 'waiting' }));
    const debug = await ok(t, tokA, 'POST', '/core/workflow/debug', { appId, nodes, edges, variables: {} });
    expect(debug.nextStepRunNodes.map((n: { nodeId: string }) => n.nodeId)).toEqual(['if']);
    expect(debug.finishedEdges.find((e: { target: string }) => e.target === 'if').status).toBe('active');
    // The next step, as the editor sends it: the returned nodes and edges, the next nodes as entries.
    const nextIds = debug.nextStepRunNodes.map((n: { nodeId: string }) => n.nodeId);
    const step2 = await ok(t, tokA, 'POST', '/core/workflow/debug', {
      appId,
      nodes: debug.finishedNodes.map((n: { nodeId: string }) => ({ ...n, isEntry: nextIds.includes(n.nodeId) })),
      edges: debug.finishedEdges,
      variables: debug.newVariables,
    });
    expect(step2.flowResponses.map((r: { nodeId: string }) => r.nodeId)).toEqual(['if']);
    expect(step2.nextStepRunNodes.length).toBeGreaterThan(0);
    // The editor sends both branch targets as the next entries; only the branch taken runs (no
    // question in a debug run: the ELSE one), the other is skipped, as the reference decides.
    const step2Ids = step2.nextStepRunNodes.map((n: { nodeId: string }) => n.nodeId);
    expect(step2Ids.sort()).toEqual(['other', 'vip']);
    const step3 = await ok(t, tokA, 'POST', '/core/workflow/debug', {
      appId,
      nodes: step2.finishedNodes.map((n: { nodeId: string }) => ({ ...n, isEntry: step2Ids.includes(n.nodeId) })),
      edges: step2.finishedEdges,
      variables: step2.newVariables,
    });
    expect(step3.flowResponses.map((r: { nodeId: string }) => r.nodeId)).toEqual(['other']);
    expect(step3.nextStepRunNodes).toEqual([]);
    expect((await call(t, tokB, 'POST', '/core/workflow/debug', { appId, nodes, edges })).status).toBe(403);
  });
});

describe('input guides', () => {
  it('create, list, query, update, delete, deleteAll, countTotal', async () => {
    expect(await ok(t, tokA, 'POST', '/core/chat/inputGuide/create', { appId, textList: ['How to reset password', 'How to pay', 'How to pay', 'Opening hours'] })).toEqual({ insertLength: 3 });
    expect(await ok(t, tokA, 'POST', '/core/chat/inputGuide/create', { appId, textList: ['How to pay'] })).toEqual({ insertLength: 0 });
    expect(await ok(t, tokA, 'GET', '/core/chat/inputGuide/countTotal', { appId })).toEqual({ total: 3 });
    const list = await ok(t, tokA, 'GET', '/core/chat/inputGuide/list', { appId, current: 1, pageSize: 2, searchKey: 'how' });
    expect(list.total).toBe(2);
    expect(list.list.map((g: { text: string }) => g.text)).toEqual(['How to pay', 'How to reset password']);
    expect(await ok(t, tokA, 'POST', '/core/chat/inputGuide/query', { appId, searchKey: 'how to' })).toEqual(['How to pay', 'How to reset password']);
    expect(await ok(t, tokA, 'POST', '/core/chat/inputGuide/query', { appId, searchKey: '(' })).toEqual([]);
    // The newest six matches, the typed text itself left out (five then), as the reference.
    await ok(t, tokA, 'POST', '/core/chat/inputGuide/create', { appId, textList: ['tip 1', 'tip 2', 'tip 3', 'tip 4', 'tip 5', 'tip 6', 'tip'] });
    expect(await ok(t, tokA, 'POST', '/core/chat/inputGuide/query', { appId, searchKey: 'tip' })).toHaveLength(5);
    expect(await ok(t, tokA, 'POST', '/core/chat/inputGuide/query', { appId, searchKey: 'tip ' })).toHaveLength(6);
    await ok(t, tokA, 'POST', '/core/chat/inputGuide/delete', { appId, dataIdList: (await ok(t, tokA, 'GET', '/core/chat/inputGuide/list', { appId, searchKey: 'tip', pageSize: 30 })).list.map((g: { _id: string }) => g._id) });
    const id = list.list[0]._id;
    await ok(t, tokA, 'PUT', '/core/chat/inputGuide/update', { appId, dataId: id, text: 'How to pay by card' });
    expect((await call(t, tokA, 'PUT', '/core/chat/inputGuide/update', { appId, dataId: id, text: 'Opening hours' })).status).toBe(409);
    expect((await call(t, tokB, 'POST', '/core/chat/inputGuide/create', { appId, textList: ['x'] })).status).toBe(403);
    await ok(t, tokA, 'POST', '/core/chat/inputGuide/delete', { appId, dataIdList: [id] });
    expect(await ok(t, tokA, 'GET', '/core/chat/inputGuide/countTotal', { appId })).toEqual({ total: 2 });
    await ok(t, tokA, 'POST', '/core/chat/inputGuide/deleteAll', { appId });
    expect(await ok(t, tokA, 'GET', '/core/chat/inputGuide/countTotal', { appId })).toEqual({ total: 0 });
    expect((await call(t, tokA, 'POST', '/core/chat/inputGuide/create', { appId, textList: 'x' })).body.message).toMatch(/textList/);
  });
});

describe('answers of the model provider that break its API', () => {
  it('a null body, a body that is not JSON, or content that is not text: the turn fails as a gateway error, never a 500', async () => {
    try {
      for (const text of ['null', 'oops, not json', '{"choices":[{"message":{"content":["a","b"]}}]}', '{"choices":null}']) {
        fake.route('POST', '/v1/chat/completions', () => ({ text }));
        const res = await completions(authHeaders(tokA), { appId, messages: [{ role: 'user', content: 'hello' }] });
        expect(res.statusCode, `${text}: ${res.body}`).toBeGreaterThanOrEqual(400);
        expect(res.statusCode, `${text}: ${res.body}`).not.toBe(500);
        expect(res.json().message).not.toMatch(/^Invalid request/);
      }
      // Streaming: a null chunk is skipped, the rest of the answer still arrives.
      fake.route('POST', '/v1/chat/completions', () => ({ text: 'data: null\n\ndata: {"choices":[{"delta":{"content":"fine"}}]}\n\ndata: [DONE]\n\n' }));
      const streamed = await completions(authHeaders(tokA), { appId, stream: true, messages: [{ role: 'user', content: 'hello' }] });
      expect(streamed.body).toContain('fine');
    } finally {
      fake.unroute('POST', '/v1/chat/completions');
    }
  });
});
