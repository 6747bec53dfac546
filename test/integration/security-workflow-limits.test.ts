import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { call, ok } from './apps-helpers.js';
import { createPublishedApp, simpleChatGraph, sseFrames, startChatApp } from './chat-helpers.js';

/**
 * What one workflow turn may cost a caller who can only read an app: graph size (chatTest sends
 * its own graph).
 */
let t: TestApp;
let fake: FakeOpenAi;
let ownerToken: string;
let readerToken: string;
let appId: string;

const start = { nodeId: 'start', flowNodeType: 'workflowStart', name: 'Start', inputs: [], outputs: [{ id: 'userChatInput', key: 'userChatInput', valueType: 'string' }] };
const edge = (source: string, target: string) => ({ source, sourceHandle: `${source}-source-right`, target, targetHandle: `${target}-target-left` });
const chatTest = (token: string, graph: { nodes: unknown[]; edges: unknown[] }, extra: Record<string, unknown> = {}) =>
  t.app.inject({ method: 'POST', url: '/api/core/chat/chatTest', headers: authHeaders(token), payload: { appId, nodes: graph.nodes, edges: graph.edges, messages: [{ role: 'user', content: 'go' }], ...extra } });

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
