import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countTokens } from '../../src/domain/token-count.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { type HangupRig, openCompletion, PARTIAL, rawCompletion, savedTurn, startHangupRig, usageRecords, waitFor } from './chat-hangup-helpers.js';
import { createPublishedApp } from './chat-helpers.js';

/**
 * A hang-up inside the nodes that call out: an agent's model rounds and its tool calls, an app
 * run as a node, an HTTP node. What ran is saved and billed, as for a plain model node
 * (chat-turn-hangup.test.ts).
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

describe('a client that hangs up during an HTTP node call', () => {
  it('saves the turn with the HTTP answer, and runs no step after it', async () => {
    const { t, fake } = rig;
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    let called = false;
    fake.route('GET', '/slow', async () => {
      called = true;
      await released;
      return { json: { weather: 'sunny' } };
    });
    const http = {
      nodeId: 'http',
      flowNodeType: 'httpRequest468',
      name: 'Lookup',
      inputs: [
        { key: 'system_addInputParam', renderTypeList: ['addInputParam'], value: {} },
        { key: 'system_httpMethod', value: 'GET' },
        { key: 'system_httpReqUrl', value: `${fake.origin}/slow` },
      ],
      outputs: [{ id: 'httpRawResponse', key: 'httpRawResponse', valueType: 'any' }],
    };
    const appId = await createPublishedApp(t, token, 'Hang-up HTTP', { nodes: [start, http, chatNode('after', 'After', 'Be brief.')], edges: [edge('start', 'http'), edge('http', 'after')], chatConfig: {} });
    const before = modelCalls();
    const turn = await rawCompletion(rig, authHeaders(token), { appId, chatId: 'http-call', stream: true, detail: true, messages: [{ role: 'user', content: 'weather?' }] });
    expect(await waitFor(() => (called ? true : undefined))).toBe(true);
    await turn.hangUp();
    release();
    const saved = await savedTurn(t, appId, 'http-call');
    expect(saved).toBeDefined();
    const responses = saved.ai.responseData as { moduleName: string; httpResult?: unknown }[];
    expect(responses.map((r) => r.moduleName)).toEqual(['Start', 'Lookup']);
    expect(responses[1]?.httpResult).toEqual({ weather: 'sunny' });
    expect(await usageRecords(t, appId)).toHaveLength(1);
    expect(modelCalls()).toBe(before);
    fake.unroute('GET', '/slow');
  });
});
