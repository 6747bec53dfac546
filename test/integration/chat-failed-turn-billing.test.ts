/**
 * A turn that fails after a model call answered is billed for what ran: the usage record is
 * written and the credential that paid is charged, so its point limit holds. Before, billing ran
 * only when the whole workflow finished: a caller steering a later node into failing (a JSON body
 * built from the question, a tool fed a bad argument) had every turn free, its answer streamed.
 */
import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { apiKeyHeaders, createApiKey, createUser, login } from '../helpers/platform.js';
import { agentGraph, chain, createPublishedApp, simpleChatGraph, sseFrames, startChatApp } from './chat-helpers.js';

let t: TestApp;
let fake: FakeOpenAi;
let tok: string;

/** An HTTP node whose JSON body holds `value` bare: a value that is no JSON fails the node ("Invalid JSON body"). */
const jsonPoster = (nodeId: string, value: string, extra: Record<string, unknown> = {}) => ({
  nodeId,
  flowNodeType: 'httpRequest468',
  name: 'Poster',
  ...extra,
  inputs: [
    { key: 'system_httpMethod', value: 'POST' },
    { key: 'system_httpReqUrl', value: 'http://127.0.0.1:9/never-called' },
    { key: 'system_httpJsonBody', value: `{"data": ${value}}` },
    { key: 'system_httpContentType', value: 'json' },
    ...((extra.inputs as unknown[]) ?? []),
  ],
  outputs: [{ id: 'httpRawResponse', key: 'httpRawResponse', valueType: 'any' }],
});

const usagesOf = async (appId: string) => {
  await t.app.identity.usage.drain();
  return t.app.mongo.db.collection('usages').find({ appId: new ObjectId(appId) }).toArray();
};
const keyPoints = async (name: string) => (await t.app.mongo.db.collection('openapis').findOne({ name }))?.usagePoints as number;
const completions = (key: string, payload: Record<string, unknown>) => t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: apiKeyHeaders(key), payload });

beforeAll(async () => {
  ({ t, fake } = await startChatApp());
  await createUser(t, { username: 'biller', password: 'password-bl1' });
  tok = await login(t, 'biller', 'password-bl1');
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('a turn failing after its model answered', () => {
  it('is billed for the model call, and the key reaches its limit', async () => {
    const graph = structuredClone(simpleChatGraph) as typeof simpleChatGraph;
    (graph.nodes as unknown[]).push(jsonPoster('http', '{{$workflowStartNodeId.userChatInput$}}'));
    (graph.edges as unknown[]).push({ source: 'ai', sourceHandle: 'ai-source-right', target: 'http', targetHandle: 'http-target-left' });
    const appId = await createPublishedApp(t, tok, 'Failing poster', graph);
    const key = await createApiKey(t, tok, { name: 'poster key', appId, limit: { maxUsagePoints: 2 } });

    const streamed = await completions(key, { stream: true, messages: [{ role: 'user', content: 'not json please' }] });
    const frames = sseFrames(streamed.body);
    // The answer went out, then the failure.
    expect(frames.some((f) => f.data.includes('Echo: not j'))).toBe(true);
    expect(frames.find((f) => f.event === 'error')?.data).toContain('Invalid JSON body');
    const first = await usagesOf(appId);
    expect(first).toHaveLength(1);
    expect(first[0]!.list.map((u: { moduleName: string }) => u.moduleName)).toEqual(['AI chat']);
    expect(first[0]!.totalPoints).toBeGreaterThan(0);
    expect(await keyPoints('poster key')).toBeCloseTo(first[0]!.totalPoints, 6);

    const plain = await completions(key, { messages: [{ role: 'user', content: 'not json again' }] });
    expect(plain.statusCode).toBe(400);
    expect(await usagesOf(appId)).toHaveLength(2);
    // Two turns of 1.5 points passed the key's 2: the next is refused before it runs.
    const refused = await completions(key, { messages: [{ role: 'user', content: 'one more' }] });
    expect(refused.statusCode, refused.body).toBe(403);
    expect(refused.json().message).toContain('usage points');
  });

  it("an agent whose tool fails is billed for its round, and a child app's failure for the child's model call", async () => {
    const poster = jsonPoster('poster', '{{payload}}', { intro: 'Posts a payload', inputs: [{ key: 'payload', valueType: 'string', toolDescription: 'the payload', required: true, canEdit: true }] });
    const agentApp = await createPublishedApp(t, tok, 'Failing agent', agentGraph([poster]));
    const key = await createApiKey(t, tok, { name: 'agent key' });
    const failed = await completions(key, { appId: agentApp, messages: [{ role: 'user', content: 'not json' }] });
    expect(failed.statusCode, failed.body).toBe(400);
    const agentUsages = await usagesOf(agentApp);
    expect(agentUsages).toHaveLength(1);
    expect(agentUsages[0]!.list.map((u: { moduleName: string }) => u.moduleName)).toEqual(['Agent']);
    expect(agentUsages[0]!.totalPoints).toBeGreaterThan(0);

    // A parent app calling the failing poster app: the child's model call is billed with the parent's turn.
    const childGraph = structuredClone(simpleChatGraph) as typeof simpleChatGraph;
    (childGraph.nodes as unknown[]).push(jsonPoster('http', '{{$workflowStartNodeId.userChatInput$}}'));
    (childGraph.edges as unknown[]).push({ source: 'ai', sourceHandle: 'ai-source-right', target: 'http', targetHandle: 'http-target-left' });
    const child = await createPublishedApp(t, tok, 'Failing child', childGraph);
    const parentGraph = chain({
      nodeId: 'call',
      flowNodeType: 'appModule',
      name: 'Child',
      pluginId: child,
      inputs: [{ key: 'userChatInput', value: ['start', 'userChatInput'] }, { key: 'history', value: 0 }],
      outputs: [{ id: 'answerText', key: 'answerText' }],
    });
    const parent = await createPublishedApp(t, tok, 'Parent of failing child', parentGraph);
    const nested = await completions(key, { appId: parent, messages: [{ role: 'user', content: 'not json' }] });
    expect(nested.statusCode, nested.body).toBe(400);
    const parentUsages = await usagesOf(parent);
    expect(parentUsages).toHaveLength(1);
    expect(parentUsages[0]!.list.map((u: { moduleName: string }) => u.moduleName)).toEqual(['AI chat']);
  });

  it('a failure that keeps its error (an app error: a child app deleted since) bills each model call once', async () => {
    const child = await createPublishedApp(t, tok, 'Short-lived child', simpleChatGraph);
    const graph = structuredClone(simpleChatGraph) as typeof simpleChatGraph;
    (graph.nodes as unknown[]).push({
      nodeId: 'call',
      flowNodeType: 'appModule',
      name: 'Child',
      pluginId: child,
      inputs: [{ key: 'userChatInput', value: ['workflowStartNodeId', 'userChatInput'] }, { key: 'history', value: 0 }],
      outputs: [{ id: 'answerText', key: 'answerText' }],
    });
    (graph.edges as unknown[]).push({ source: 'ai', sourceHandle: 'ai-source-right', target: 'call', targetHandle: 'call-target-left' });
    const parent = await createPublishedApp(t, tok, 'Parent of a deleted child', graph);
    const deleted = await t.app.inject({ method: 'DELETE', url: `/api/core/app/del?appId=${child}`, headers: { token: tok } });
    expect(deleted.statusCode, deleted.body).toBe(200);
    const key = await createApiKey(t, tok, { name: 'once key' });
    const failed = await completions(key, { appId: parent, messages: [{ role: 'user', content: 'hello' }] });
    expect(failed.statusCode).toBeGreaterThanOrEqual(400);
    const usages = await usagesOf(parent);
    expect(usages).toHaveLength(1);
    expect(usages[0]!.list.map((u: { moduleName: string }) => u.moduleName)).toEqual(['AI chat']);
    expect(await keyPoints('once key')).toBeCloseTo(usages[0]!.totalPoints, 6);
  });
});
