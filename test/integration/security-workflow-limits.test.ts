import type { CommandStartedEvent } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { call, ok } from './apps-helpers.js';
import { createPublishedApp, simpleChatGraph, sseFrames, startChatApp } from './chat-helpers.js';

/**
 * What one workflow turn may cost a caller who can only read an app: graph size (chatTest sends
 * its own graph), variable substitution (completions set any variable, share-link visitors too)
 * and the chat history a node asks for.
 */
let t: TestApp;
let fake: FakeOpenAi;
let ownerToken: string;
let readerToken: string;
let appId: string;

const start = { nodeId: 'start', flowNodeType: 'workflowStart', name: 'Start', inputs: [], outputs: [{ id: 'userChatInput', key: 'userChatInput', valueType: 'string' }] };
const edge = (source: string, target: string) => ({ source, sourceHandle: `${source}-source-right`, target, targetHandle: `${target}-target-left` });
const answer = (text: string, extraInputs: Record<string, unknown>[] = []) => ({
  nodeId: 'answer',
  flowNodeType: 'answerNode',
  name: 'Answer',
  inputs: [{ key: 'text', value: text }, ...extraInputs],
  outputs: [],
});

const chatTest = (token: string, graph: { nodes: unknown[]; edges: unknown[] }, extra: Record<string, unknown> = {}) =>
  t.app.inject({ method: 'POST', url: '/api/core/chat/chatTest', headers: authHeaders(token), payload: { appId, nodes: graph.nodes, edges: graph.edges, messages: [{ role: 'user', content: 'go' }], ...extra } });

const completions = (payload: Record<string, unknown>) =>
  t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: authHeaders(ownerToken), payload: { messages: [{ role: 'user', content: 'go' }], ...payload } });

/**
 * The review's request, four levels deep (v0 is sixteen {{v1}}, v1 sixteen {{v2}} …): expanded
 * again after each insertion, four levels made 524 K characters and six made 134 M.
 */
function nestedVariables(levels = 4): Record<string, string> {
  const variables: Record<string, string> = { [`v${levels}`]: 'xxxxxxxx' };
  for (let i = 0; i < levels; i++) variables[`v${i}`] = `{{v${i + 1}}}`.repeat(16);
  return variables;
}

beforeAll(async () => {
  ({ t, fake } = await startChatApp());
  const owner = await createUser(t, { username: 'limits-owner', password: 'password-l1' });
  await createUser(t, { username: 'limits-reader', password: 'password-l2', teamId: owner.teamId, role: 'member', permission: 4 });
  ownerToken = await login(t, 'limits-owner', 'password-l1');
  readerToken = await login(t, 'limits-reader', 'password-l2');
  appId = await createPublishedApp(t, ownerToken, 'Limits app', simpleChatGraph);
  await ok(t, ownerToken, 'POST', '/core/app/update', { appId, defaultPermission: 4 });
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('graph size', () => {
  it('chatTest refuses more than 1,000 nodes, 2,000 edges or 200 inputs on a node with a 400 naming the field', async () => {
    const fillers = (count: number) => Array.from({ length: count }, (_, i) => ({ nodeId: `n${i}` }));
    const tooMany = await chatTest(readerToken, { nodes: [start, ...fillers(1000)], edges: [] });
    expect(tooMany.statusCode, tooMany.body).toBe(400);
    expect(tooMany.json().message).toBe("Invalid field 'nodes': a workflow has at most 1000 nodes");

    const wide = { nodeId: 'E', flowNodeType: 'emptyNode', inputs: Array.from({ length: 201 }, () => ({ key: 'k', value: ['zz', 'o'] })) };
    const tooWide = await chatTest(readerToken, { nodes: [start, wide], edges: [edge('start', 'E')] });
    expect(tooWide.statusCode, tooWide.body).toBe(400);
    expect(tooWide.json().message).toBe("Invalid field 'nodes.1.inputs': a node has at most 200 inputs and 200 outputs");

    const edges = Array.from({ length: 2001 }, () => edge('start', 'start'));
    const tooLinked = await chatTest(readerToken, { nodes: [start], edges });
    expect(tooLinked.statusCode, tooLinked.body).toBe(400);
    expect(tooLinked.json().message).toBe("Invalid field 'edges': a workflow has at most 2000 edges");
  });

  it('a stored graph is held to the same limits', async () => {
    const nodes = [start, ...Array.from({ length: 1000 }, (_, i) => ({ nodeId: `n${i}`, flowNodeType: 'emptyNode', inputs: [], outputs: [] }))];
    const publish = await call(t, ownerToken, 'POST', `/core/app/version/publish?appId=${appId}`, { nodes, edges: [], isPublish: true });
    expect(publish.status).toBe(400);
    expect(publish.body.message).toBe("Invalid field 'nodes': a workflow has at most 1000 nodes");
    const update = await call(t, ownerToken, 'POST', '/core/app/update', { appId, nodes });
    expect(update.status).toBe(400);
  });

  it("the review's self-loop at the limits (200 references to a missing node, 1,000 nodes) runs its 200 node runs and answers", async () => {
    const looping = { nodeId: 'E', flowNodeType: 'emptyNode', name: 'Loop', inputs: Array.from({ length: 200 }, () => ({ key: 'k', value: ['zz', 'o'] })), outputs: [] };
    const fillers = Array.from({ length: 998 }, (_, i) => ({ nodeId: `n${i}` }));
    const res = await chatTest(readerToken, { nodes: [start, looping, ...fillers], edges: [edge('start', 'E'), edge('E', 'E')] });
    expect(res.statusCode, res.body).toBe(200);
    const frames = sseFrames(res.body);
    expect(frames.some((frame) => frame.event === 'error')).toBe(false);
    expect(frames.at(-1)?.data).toBeDefined();
  });
});

describe('variable substitution', () => {
  it('nested variables a caller sets are inserted as written, once (chatTest and completions)', async () => {
    const variables = nestedVariables();
    const graph = { nodes: [start, answer('{{v0}}')], edges: [edge('start', 'answer')] };
    const tested = await chatTest(readerToken, graph, { variables });
    expect(tested.statusCode, tested.body).toBe(200);
    expect(tested.body).toContain(JSON.stringify('{{v1}}'.repeat(16)).slice(1, -1));
    expect(tested.body.length).toBeLessThan(100_000);

    const stored = await createPublishedApp(t, ownerToken, 'Nested variables', { ...graph, chatConfig: {} });
    const res = await completions({ appId: stored, variables });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().choices[0].message.content.trim()).toBe('{{v1}}'.repeat(16));
  });

  it('a text whose variables would add more than 1,000,000 characters fails the turn naming its node (400)', async () => {
    const stored = await createPublishedApp(t, ownerToken, 'Long text', { nodes: [start, answer('{{v}}'.repeat(300))], edges: [edge('start', 'answer')], chatConfig: {} });
    const res = await completions({ appId: stored, variables: { v: 'x'.repeat(5000) } });
    expect(res.statusCode, res.body.slice(0, 300)).toBe(400);
    expect(res.json()).toMatchObject({ statusText: 'missingParams', message: "Node 'Answer' (answerNode): filling in its variables would add more than 1000000 characters to its texts" });
  });
});

describe('chat history', () => {
  it('a node asking for a billion rounds reads at most 100 rounds (200 items)', async () => {
    const stored = await createPublishedApp(t, ownerToken, 'Long memory', {
      nodes: [start, answer('ok', [{ key: 'history', value: 1_000_000_000 }])],
      edges: [edge('start', 'answer')],
      chatConfig: {},
    });
    const limits: unknown[] = [];
    const listener = (event: CommandStartedEvent) => {
      if (event.commandName === 'find' && event.command.find === 'chatitems') limits.push(event.command.limit);
    };
    t.app.mongo.client.on('commandStarted', listener);
    try {
      const res = await completions({ appId: stored, chatId: 'long-memory' });
      expect(res.statusCode, res.body).toBe(200);
    } finally {
      t.app.mongo.client.off('commandStarted', listener);
    }
    expect(limits).toEqual([200]);
  });
});
