import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countTokens } from '../../src/domain/token-count.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { CUT_MESSAGE } from '../../src/platform/chat/workflow-nodes/call-cut.js';
import { type HangupRig, holdRoute, openCompletion, PARTIAL, rawCompletion, savedTurn, startHangupRig, usageRecords, waitFor } from './chat-hangup-helpers.js';
import { createPublishedApp } from './chat-helpers.js';

/**
 * A hang-up inside the nodes that call out: an agent's model rounds and its tool calls, an app
 * run as a node, an HTTP node's and a readFiles node's calls (cut while the service still holds
 * them), a classifier's and an extractor's model calls (recorded as cut, not as a result). What
 * ran is saved and billed, as for a plain model node (chat-turn-hangup.test.ts).
 */
let rig: HangupRig;
let token: string;

const start = { nodeId: 'start', flowNodeType: 'workflowStart', name: 'Start', inputs: [], outputs: [{ id: 'userChatInput', key: 'userChatInput', valueType: 'string' }] };
const edge = (source: string, target: string) => ({ source, sourceHandle: `${source}-source-right`, target, targetHandle: `${target}-target-left` });
const chatNode = (nodeId: string, name: string, systemPrompt: string) => ({
  nodeId,
  flowNodeType: 'chatNode',
  name,
  intro: 'Answers a question',
  inputs: [
    { key: 'model', value: 'fake-llm' },
    { key: 'systemPrompt', value: systemPrompt },
    { key: 'history', value: 0 },
    { key: 'userChatInput', value: ['start', 'userChatInput'], valueType: 'string' },
  ],
  outputs: [{ id: 'answerText', key: 'answerText', valueType: 'string' }],
});
/** start → an agent offered `tool` (the fake calls it in the first round). */
const agentGraph = (tool: Record<string, unknown>) => ({
  nodes: [
    start,
    {
      nodeId: 'agent',
      flowNodeType: 'tools',
      name: 'Agent',
      inputs: [
        { key: 'model', value: 'fake-llm' },
        { key: 'userChatInput', value: ['start', 'userChatInput'] },
      ],
      outputs: [{ id: 'answerText', key: 'answerText' }],
    },
    tool,
  ],
  edges: [edge('start', 'agent'), { source: 'agent', sourceHandle: 'selectedTools', target: tool.nodeId, targetHandle: 'selectedTools' }],
  chatConfig: {},
});
const types = (values: { type: string }[]) => values.map((value) => value.type);
const texts = (values: { type: string; text?: { content: string } }[]) => values.flatMap((value) => (value.text ? [value.text.content] : []));
const modelCalls = () => rig.fake.requests.filter((request) => request.path === '/v1/chat/completions').length;

beforeAll(async () => {
  rig = await startHangupRig();
  await createUser(rig.t, { username: 'hangup-nodes', password: 'password-h2' });
  token = await login(rig.t, 'hangup-nodes', 'password-h2');
}, 60_000);

afterAll(async () => {
  await rig?.close();
});

describe('a client that hangs up inside an agent', () => {
  it("during a streamed round after a tool ran: the tool's answer, its call and the partial answer are saved and billed", async () => {
    const { t } = rig;
    const weather = { nodeId: 'weather', flowNodeType: 'answerNode', name: 'Weather', intro: 'Looks up the weather', inputs: [{ key: 'text', value: 'It is sunny. ' }], outputs: [] };
    const appId = await createPublishedApp(t, token, 'Hang-up agent', agentGraph(weather));
    const turn = await openCompletion(rig, authHeaders(token), { appId, chatId: 'agent-round', stream: true, detail: true, messages: [{ role: 'user', content: 'weather?' }] });
    await turn.readUntilThenHangUp('First half');
    const saved = await savedTurn(t, appId, 'agent-round');
    expect(saved).toBeDefined();
    expect(types(saved.ai.value)).toEqual(['text', 'tool', 'text']);
    // (An answer node's text starts on a new line, as the reference writes it.)
    expect(texts(saved.ai.value)).toEqual(['\nIt is sunny. ', PARTIAL]);
    const [record] = await usageRecords(t, appId);
    const [line] = record!.list as { moduleName: string; tokens: number }[];
    // The first round's reported 15, then the cut round's prompt and part estimated.
    expect(line!.moduleName).toBe('Agent');
    expect(line!.tokens).toBeGreaterThanOrEqual(15 + countTokens('weather?') + countTokens(PARTIAL));
  });

  it('during a tool call: the tool ran as far as it got, no further round is asked for', async () => {
    const { t } = rig;
    const appId = await createPublishedApp(t, token, 'Hang-up tool', agentGraph(chatNode('helper', 'Helper', 'HOLD')));
    const before = modelCalls();
    const turn = await openCompletion(rig, authHeaders(token), { appId, chatId: 'agent-tool', stream: true, detail: true, messages: [{ role: 'user', content: 'ask the helper' }] });
    await turn.readUntilThenHangUp('First half');
    const saved = await savedTurn(t, appId, 'agent-tool');
    expect(saved).toBeDefined();
    expect(types(saved.ai.value)).toEqual(['text', 'tool']);
    expect(texts(saved.ai.value)).toEqual([PARTIAL]);
    const [record] = await usageRecords(t, appId);
    expect((record!.list as { moduleName: string }[]).map((line) => line.moduleName)).toEqual(['Agent', 'Helper']);
    // The agent's round and the helper's call, and no round after the hang-up.
    expect(modelCalls() - before).toBe(2);
  });
});

describe('a client that hangs up inside another app run as a node', () => {
  it("saves the child app's partial answer and bills its call", async () => {
    const { t } = rig;
    const childId = await createPublishedApp(t, token, 'Child', { nodes: [start, chatNode('ai', 'Child chat', 'HOLD')], edges: [edge('start', 'ai')], chatConfig: {} });
    const app = {
      nodeId: 'child',
      flowNodeType: 'appModule',
      name: 'Run child',
      pluginId: childId,
      inputs: [
        { key: 'userChatInput', value: ['start', 'userChatInput'] },
        { key: 'history', value: 0 },
      ],
      outputs: [{ id: 'answerText', key: 'answerText' }],
    };
    const appId = await createPublishedApp(t, token, 'Parent', { nodes: [start, app], edges: [edge('start', 'child')], chatConfig: {} });
    const turn = await openCompletion(rig, authHeaders(token), { appId, chatId: 'nested', stream: true, messages: [{ role: 'user', content: 'a story' }] });
    await turn.readUntilThenHangUp('First half');
    const saved = await savedTurn(t, appId, 'nested');
    expect(saved?.ai.value).toEqual([{ type: 'text', text: { content: PARTIAL } }]);
    const [record] = await usageRecords(t, appId);
    const [line] = record!.list as { moduleName: string; amount: number }[];
    expect(record!.list).toHaveLength(1);
    expect(line!.moduleName).toBe('Child');
    expect(line!.amount).toBeGreaterThan(0);
  });
});

describe('a client that hangs up during a call a node makes', () => {
  it('an HTTP node: the call is cut (its connection closed) and the turn saved and billed while the service still holds it; no step runs after it', async () => {
    const { t, fake } = rig;
    const held = holdRoute(fake, 'GET', '/slow', { weather: 'sunny' });
    try {
      const http = {
        nodeId: 'http',
        flowNodeType: 'httpRequest468',
        name: 'Lookup',
        inputs: [
          { key: 'system_addInputParam', renderTypeList: ['addInputParam'], value: {} },
          { key: 'system_httpMethod', value: 'GET' },
          { key: 'system_httpReqUrl', value: `${fake.origin}/slow` },
          { key: 'system_httpTimeout', value: 600 },
        ],
        outputs: [{ id: 'httpRawResponse', key: 'httpRawResponse', valueType: 'any' }],
      };
      const appId = await createPublishedApp(t, token, 'Hang-up HTTP', { nodes: [start, http, chatNode('after', 'After', 'Be brief.')], edges: [edge('start', 'http'), edge('http', 'after')], chatConfig: {} });
      const before = modelCalls();
      const turn = await rawCompletion(rig, authHeaders(token), { appId, chatId: 'http-call', stream: true, detail: true, messages: [{ role: 'user', content: 'weather?' }] });
      expect(await waitFor(() => (held.called ? true : undefined))).toBe(true);
      await turn.hangUp();
      // Not released: the service still holds the call, and the turn is over.
      const saved = await savedTurn(t, appId, 'http-call');
      expect(saved).toBeDefined();
      const responses = saved.ai.responseData as { moduleName: string; httpResult?: { error?: Record<string, unknown> } }[];
      expect(responses.map((r) => r.moduleName)).toEqual(['Start', 'Lookup']);
      expect(responses[1]?.httpResult?.error).toMatchObject({ message: CUT_MESSAGE, name: 'CanceledError', code: 'ERR_CANCELED', method: 'GET' });
      expect(await usageRecords(t, appId)).toHaveLength(1);
      expect(modelCalls()).toBe(before);
      expect(await waitFor(() => (held.closedByCaller ? true : undefined))).toBe(true);
    } finally {
      held.release();
      fake.unroute('GET', '/slow');
    }
  });

  it('a readFiles download: cut the same way, the file recorded as not read', async () => {
    const { t, fake } = rig;
    const held = holdRoute(fake, 'GET', '/held/notes.txt', 'never read');
    try {
      const read = {
        nodeId: 'read',
        flowNodeType: 'readFiles',
        name: 'Read',
        inputs: [{ key: 'fileUrlList', value: [`${fake.origin}/held/notes.txt`] }],
        outputs: [{ id: 'system_text', key: 'system_text', valueType: 'string' }],
      };
      const appId = await createPublishedApp(t, token, 'Hang-up read', { nodes: [start, read, chatNode('after', 'After', 'Be brief.')], edges: [edge('start', 'read'), edge('read', 'after')], chatConfig: {} });
      const turn = await rawCompletion(rig, authHeaders(token), { appId, chatId: 'read-call', stream: true, detail: true, messages: [{ role: 'user', content: 'read it' }] });
      expect(await waitFor(() => (held.called ? true : undefined))).toBe(true);
      await turn.hangUp();
      const saved = await savedTurn(t, appId, 'read-call');
      expect(saved).toBeDefined();
      const responses = saved.ai.responseData as { moduleName: string; readFilesResult?: string }[];
      expect(responses.map((r) => r.moduleName)).toEqual(['Start', 'Read']);
      expect(responses[1]?.readFilesResult).toContain(`The file could not be read: ${CUT_MESSAGE}`);
      expect(await waitFor(() => (held.closedByCaller ? true : undefined))).toBe(true);
    } finally {
      held.release();
      fake.unroute('GET', '/held/notes.txt');
    }
  });
});

describe('a client that hangs up while a classifier, an extractor or a query extension asks the model', () => {
  const answer = (nodeId: string, text: string) => ({ nodeId, flowNodeType: 'answerNode', name: nodeId, inputs: [{ key: 'text', value: text }], outputs: [] });

  it('a classifier records the cut call (billed) and no class; no branch runs', async () => {
    const { t, holds } = rig;
    const classify = {
      nodeId: 'cq',
      flowNodeType: 'classifyQuestion',
      name: 'Classify',
      inputs: [
        { key: 'model', value: 'fake-llm' },
        { key: 'systemPrompt', value: '[HOLD]' },
        { key: 'history', value: 0 },
        { key: 'userChatInput', value: ['start', 'userChatInput'] },
        { key: 'agents', value: [{ key: 'a', value: 'Weather' }, { key: 'b', value: 'Other' }] },
      ],
      outputs: [{ id: 'cqResult', key: 'cqResult', valueType: 'string' }],
    };
    const graph = {
      nodes: [start, classify, answer('weather', 'sunny'), answer('other', 'no idea')],
      edges: [edge('start', 'cq'), { ...edge('cq', 'weather'), sourceHandle: 'cq-source-a' }, { ...edge('cq', 'other'), sourceHandle: 'cq-source-b' }],
      chatConfig: {},
    };
    const appId = await createPublishedApp(t, token, 'Hang-up classify', graph);
    const startedBefore = holds.started;
    const turn = await rawCompletion(rig, authHeaders(token), { appId, chatId: 'cq-call', stream: true, detail: true, messages: [{ role: 'user', content: 'is it raining?' }] });
    expect(await waitFor(() => (holds.started > startedBefore ? true : undefined))).toBe(true);
    await turn.hangUp();
    const saved = await savedTurn(t, appId, 'cq-call');
    expect(saved).toBeDefined();
    expect(saved.ai.value).toEqual([]);
    const responses = saved.ai.responseData as Record<string, unknown>[];
    expect(responses.map((r) => r.moduleName)).toEqual(['Start', 'Classify']);
    expect(responses[1]).toMatchObject({ model: 'Fake LLM', error: CUT_MESSAGE });
    expect(responses[1]).not.toHaveProperty('cqResult');
    const [record] = await usageRecords(t, appId);
    const [line] = record!.list as { moduleName: string; tokens: number }[];
    expect(line!.moduleName).toBe('Classify');
    expect(line!.tokens).toBeGreaterThanOrEqual(countTokens('is it raining?'));
  });

  it('a query extension records the cut call (billed) and no rewrite (not the question alone)', async () => {
    const { t, holds } = rig;
    const cfr = {
      nodeId: 'cfr',
      flowNodeType: 'cfr',
      name: 'Rewrite',
      inputs: [
        { key: 'model', value: 'fake-llm' },
        { key: 'systemPrompt', value: '[HOLD]' },
        { key: 'history', value: 0 },
        { key: 'userChatInput', value: ['start', 'userChatInput'] },
      ],
      outputs: [{ id: 'system_text', key: 'system_text', valueType: 'string' }],
    };
    const appId = await createPublishedApp(t, token, 'Hang-up rewrite', { nodes: [start, cfr, answer('after', 'done')], edges: [edge('start', 'cfr'), edge('cfr', 'after')], chatConfig: {} });
    const startedBefore = holds.started;
    const turn = await rawCompletion(rig, authHeaders(token), { appId, chatId: 'cfr-call', stream: true, detail: true, messages: [{ role: 'user', content: 'cheap flights' }] });
    expect(await waitFor(() => (holds.started > startedBefore ? true : undefined))).toBe(true);
    await turn.hangUp();
    const saved = await savedTurn(t, appId, 'cfr-call');
    expect(saved).toBeDefined();
    const responses = saved.ai.responseData as Record<string, unknown>[];
    expect(responses.map((r) => r.moduleName)).toEqual(['Start', 'Rewrite']);
    expect(responses[1]).toMatchObject({ query: 'cheap flights', error: CUT_MESSAGE });
    expect(responses[1]).not.toHaveProperty('textOutput');
    expect(await usageRecords(t, appId)).toHaveLength(1);
  });

  it('an extractor records the cut call (billed) and nothing extracted', async () => {
    const { t, holds } = rig;
    const extract = {
      nodeId: 'ex',
      flowNodeType: 'contentExtract',
      name: 'Extract',
      inputs: [
        { key: 'model', value: 'fake-llm' },
        { key: 'description', value: '[HOLD]' },
        { key: 'history', value: 0 },
        { key: 'content', value: ['start', 'userChatInput'] },
        { key: 'extractKeys', value: [{ key: 'city', desc: 'The city', required: true, defaultValue: 'Paris' }] },
      ],
      outputs: [
        { id: 'success', key: 'success', valueType: 'boolean' },
        { id: 'fields', key: 'fields', valueType: 'string' },
      ],
    };
    const appId = await createPublishedApp(t, token, 'Hang-up extract', { nodes: [start, extract, answer('after', 'done')], edges: [edge('start', 'ex'), edge('ex', 'after')], chatConfig: {} });
    const startedBefore = holds.started;
    const turn = await rawCompletion(rig, authHeaders(token), { appId, chatId: 'ex-call', stream: true, detail: true, messages: [{ role: 'user', content: 'I live in Rome' }] });
    expect(await waitFor(() => (holds.started > startedBefore ? true : undefined))).toBe(true);
    await turn.hangUp();
    const saved = await savedTurn(t, appId, 'ex-call');
    expect(saved).toBeDefined();
    expect(saved.ai.value).toEqual([]);
    const responses = saved.ai.responseData as Record<string, unknown>[];
    expect(responses.map((r) => r.moduleName)).toEqual(['Start', 'Extract']);
    expect(responses[1]).toMatchObject({ model: 'Fake LLM', error: CUT_MESSAGE });
    expect(responses[1]).not.toHaveProperty('extractResult');
    const [record] = await usageRecords(t, appId);
    expect((record!.list as { moduleName: string }[]).map((line) => line.moduleName)).toEqual(['Extract']);
  });
});
