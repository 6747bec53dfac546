import type { AddressInfo } from 'node:net';
import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { commandsDuring } from '../helpers/command-counter.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { call, ok } from './apps-helpers.js';
import { createPublishedApp, searchGraph, simpleChatGraph, sseFrames, startChatApp } from './chat-helpers.js';

/**
 * Workflows a caller sends (chatTest, workflow/debug) may only use datasets and apps the caller
 * can read; the HTTP node reaches this service's own /api/plugins routes by relative URL and
 * nothing else on loopback.
 */
let t: TestApp;
let fake: FakeOpenAi;
let ownerToken: string;
let readerToken: string;
let appId: string;
let secretDatasetId: string;
let openDatasetId: string;

const SECRET = 'The vault code is 7741 and only the owner may know it.';
const OPEN = 'The canteen opens at noon on weekdays.';

const start = { nodeId: 'start', flowNodeType: 'workflowStart', name: 'Start', inputs: [], outputs: [{ id: 'userChatInput', key: 'userChatInput', valueType: 'string' }] };
const edge = (source: string, target: string) => ({ source, sourceHandle: `${source}-source-right`, target, targetHandle: `${target}-target-left` });

async function datasetWith(token: string, name: string, text: string): Promise<string> {
  const datasetId = await ok(t, token, 'POST', '/core/dataset/create', { name });
  const collectionId = await ok(t, token, 'POST', '/core/dataset/collection/create', { datasetId, name: `${name} notes`, type: 'virtual' });
  await ok(t, token, 'POST', '/core/dataset/data/insertData', { collectionId, q: text });
  return datasetId;
}

const chatTest = (token: string, graph: { nodes: unknown[]; edges: unknown[] }, extra: Record<string, unknown> = {}) =>
  t.app.inject({ method: 'POST', url: '/api/core/chat/chatTest', headers: authHeaders(token), payload: { appId, nodes: graph.nodes, edges: graph.edges, messages: [{ role: 'user', content: 'vault code canteen' }], ...extra } });

/** Debug runs the search node alone, so its question is a literal. */
/** A debug run of the search node alone, as the editor starts one: the edges into it active. */
const debug = (token: string, graph: { nodes: { nodeId: string }[]; edges: { target: string }[] }) =>
  t.app.inject({
    method: 'POST',
    url: '/api/core/workflow/debug',
    headers: authHeaders(token),
    payload: {
      appId,
      nodes: graph.nodes.map((n) => ({ ...n, isEntry: n.nodeId === 'search' })),
      edges: graph.edges.map((e) => ({ ...e, status: e.target === 'search' ? 'active' : 'waiting' })),
      variables: {},
    },
  });

const usageCount = async () => {
  await t.app.identity.usage.drain();
  return t.app.mongo.db.collection('usages').countDocuments();
};

beforeAll(async () => {
  // SSRF guard on: loopback and private targets refused.
  ({ t, fake } = await startChatApp(() => ({ SSRF_ALLOW_PRIVATE: 'false' })));
  const owner = await createUser(t, { username: 'wf-owner', password: 'password-w1' });
  await createUser(t, { username: 'wf-reader', password: 'password-w2', teamId: owner.teamId, role: 'member', permission: 4 });
  ownerToken = await login(t, 'wf-owner', 'password-w1');
  readerToken = await login(t, 'wf-reader', 'password-w2');
  appId = await createPublishedApp(t, ownerToken, 'Editor app', simpleChatGraph);
  await ok(t, ownerToken, 'POST', '/core/app/update', { appId, defaultPermission: 4 });
  secretDatasetId = await datasetWith(ownerToken, 'Secret', SECRET);
  openDatasetId = await datasetWith(ownerToken, 'Open', OPEN);
  await ok(t, ownerToken, 'PUT', '/core/dataset/update', { id: openDatasetId, defaultPermission: 4 });
  await t.app.datasets.trainingWorker.drain();
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('datasets in a workflow the caller sends', () => {
  it('the reader can neither see nor search the secret dataset directly', async () => {
    const detail = await t.app.inject({ method: 'GET', url: `/api/core/dataset/detail?id=${secretDatasetId}`, headers: authHeaders(readerToken) });
    expect(detail.statusCode).toBe(403);
  });

  it('chatTest with a search over a dataset the caller cannot read is refused before anything runs', async () => {
    const before = await usageCount();
    const res = await chatTest(readerToken, searchGraph([{ datasetId: openDatasetId }, { datasetId: secretDatasetId }]));
    expect(res.statusCode, res.body).toBe(403);
    expect(res.headers['content-type']).toContain('application/json');
    expect(res.json()).toMatchObject({ statusText: 'unAuthDataset', data: null });
    expect(res.body).not.toContain('7741');
    expect(await usageCount()).toBe(before);
  });

  it('workflow/debug with the same search is refused the same way', async () => {
    const res = await debug(readerToken, searchGraph([{ datasetId: secretDatasetId }], 'vault code'));
    expect(res.statusCode, res.body).toBe(403);
    expect(res.json().statusText).toBe('unAuthDataset');
    expect(res.body).not.toContain('7741');
  });

  it('a dataset list wired from a variable is checked when the search runs', async () => {
    const graph = searchGraph(['VARIABLE_NODE_ID', 'datasetList']);
    const res = await chatTest(readerToken, graph, { variables: { datasetList: [{ datasetId: secretDatasetId }] } });
    expect(res.body).not.toContain('7741');
    const error = sseFrames(res.body).find((frame) => frame.event === 'error');
    expect(error, res.body).toBeDefined();
    expect(JSON.parse(error!.data)).toMatchObject({ statusText: 'unAuthDataset' });
  });

  it('a dataset the caller can read still works, in chatTest and debug', async () => {
    const res = await chatTest(readerToken, searchGraph([{ datasetId: openDatasetId }]));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).toContain('canteen');
    const step = await debug(readerToken, searchGraph([{ datasetId: openDatasetId }], 'canteen'));
    expect(step.statusCode, step.body).toBe(200);
    expect(JSON.stringify(step.json().data.flowResponses)).toContain('canteen');
  });

  it('checking the datasets of a sent graph reads no dataset and no permission row when warm', async () => {
    const graph = searchGraph([{ datasetId: openDatasetId }]);
    expect((await chatTest(readerToken, graph)).statusCode).toBe(200);
    const commands = await commandsDuring(t.app, async () => expect((await chatTest(readerToken, graph)).statusCode).toBe(200));
    expect(commands.filter((c) => c.collection === 'datasets' || c.collection === 'resource_permissions')).toEqual([]);
  });

  it('the owner may test a graph over the secret dataset', async () => {
    const res = await chatTest(ownerToken, searchGraph([{ datasetId: secretDatasetId }]));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).toContain('7741');
  });

  it('a plugin app the caller cannot read cannot be run from a sent workflow', async () => {
    const pluginGraph = {
      nodes: [
        { nodeId: 'in', flowNodeType: 'pluginInput', name: 'Input', inputs: [], outputs: [] },
        { nodeId: 'out', flowNodeType: 'pluginOutput', name: 'Output', inputs: [], outputs: [] },
      ],
      edges: [edge('in', 'out')],
      chatConfig: {},
    };
    const pluginId = await createPublishedApp(t, ownerToken, 'Private plugin', pluginGraph, 'plugin');
    await ok(t, ownerToken, 'POST', '/core/app/update', { appId: pluginId, defaultPermission: 0 });
    const graph = { nodes: [start, { nodeId: 'plugin', flowNodeType: 'pluginModule', pluginId, name: 'Plugin', inputs: [], outputs: [] }], edges: [edge('start', 'plugin')] };
    const res = await chatTest(readerToken, graph);
    expect(res.statusCode, res.body).toBe(403);
    expect(res.json().statusText).toBe('unAuthApp');
  });

  it("a published app keeps its editor's datasets: the reader chats with it and gets the quotes", async () => {
    const publishedId = await createPublishedApp(t, ownerToken, 'Vault bot', searchGraph([{ datasetId: secretDatasetId }]));
    await ok(t, ownerToken, 'POST', '/core/app/update', { appId: publishedId, defaultPermission: 4 });
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: authHeaders(readerToken), payload: { appId: publishedId, messages: [{ role: 'user', content: 'vault code' }] } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().choices[0].message.content).toContain('7741');
  });
});

describe('HTTP node URLs', () => {
  /** start → HTTP node (POST JSON) with its raw response in responseData. */
  function httpGraph(url: string, body = '{"input":"yes please","rule":"yes"}') {
    const http = {
      nodeId: 'http',
      flowNodeType: 'httpRequest468',
      name: 'HTTP',
      inputs: [
        { key: 'system_httpMethod', value: 'POST' },
        { key: 'system_httpReqUrl', value: url },
        { key: 'system_httpJsonBody', value: body },
        { key: 'system_httpContentType', value: 'json' },
      ],
      outputs: [{ id: 'httpRawResponse', key: 'httpRawResponse' }],
    };
    return { nodes: [start, http], edges: [edge('start', 'http')], chatConfig: {} };
  }

  async function httpResult(url: string): Promise<Record<string, unknown>> {
    const runAppId = await createPublishedApp(t, ownerToken, `HTTP ${url}`, httpGraph(url));
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: authHeaders(ownerToken), payload: { appId: runAppId, detail: true, messages: [{ role: 'user', content: 'go' }] } });
    expect(res.statusCode, res.body).toBe(200);
    const node = res.json().responseData.find((r: { moduleType: string }) => r.moduleType === 'httpRequest468');
    return node.httpResult as Record<string, unknown>;
  }

  it('the customFeedback plugin writes only into the chat its run saves: a chatTest naming another chat in its body writes nothing', async () => {
    const victim = await t.app.inject({
      method: 'POST',
      url: '/api/v1/chat/completions',
      headers: authHeaders(ownerToken),
      payload: { appId, chatId: 'victim-chat', responseChatItemId: 'victim-answer', messages: [{ role: 'user', content: 'private question' }] },
    });
    expect(victim.statusCode, victim.body).toBe(200);
    const body = JSON.stringify({ appId, chatId: 'victim-chat', responseChatItemId: 'victim-answer', customFeedback: 'written by the reader' });
    const graph = httpGraph('/api/plugins/customFeedback/v2', body);
    const res = await chatTest(readerToken, graph);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).toMatch(/403|customFeedback plugin writes only/);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const item = await t.app.mongo.db.collection('chatitems').findOne({ chatId: 'victim-chat', dataId: 'victim-answer' });
    expect(item?.customFeedbacks ?? []).toEqual([]);
  });

  it('a relative /api/plugins URL calls this service (injected before it listens)', async () => {
    expect(await httpResult('/api/plugins/TFSwitch/index')).toEqual({ true: true });
  });

  it('other relative URLs are not served from this service', async () => {
    for (const url of ['/api/core/app/list', '/api/plugins/../core/app/list', '//127.0.0.1/api/plugins/TFSwitch/index']) {
      const result = await httpResult(url);
      expect(result.error, `${url}: ${JSON.stringify(result)}`).toBeDefined();
      expect(JSON.stringify(result)).not.toContain('Editor app');
    }
  });

  it('listening: the relative URL goes over loopback to the own port; the absolute loopback URL stays blocked', async () => {
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = t.app.server.address() as AddressInfo;
    const logStart = t.logs().length;
    expect(await httpResult('/api/plugins/TFSwitch/index')).toEqual({ true: true });
    // The plugin route was reached over the socket (the request log names the server's port).
    const served = t
      .logs()
      .slice(logStart)
      .split('\n')
      .filter((line) => line.includes('/api/plugins/TFSwitch/index'));
    expect(served.some((line) => line.includes(`127.0.0.1:${port}`)), served.join('\n')).toBe(true);

    const blocked = await httpResult(`http://127.0.0.1:${port}/api/plugins/TFSwitch/index`);
    expect(JSON.stringify(blocked)).toMatch(/not allowed|refused|private|loopback/i);
    expect(blocked.true).toBeUndefined();
  });
});

describe('node inputs of another shape than the node reads', () => {
  const node = (nodeId: string, flowNodeType: string, inputs: { key: string; value: unknown }[]) => ({ nodeId, flowNodeType, name: nodeId, inputs, outputs: [] });
  const cases: [string, Record<string, unknown>][] = [
    ['ifElse list that is text', node('n', 'ifElseNode', [{ key: 'ifElseList', value: [{ list: 'x' }] }])],
    ['ifElse condition that is null', node('n', 'ifElseNode', [{ key: 'ifElseList', value: [{ condition: 'AND', list: [null] }, null] }])],
    ['variableUpdate item that is null', node('n', 'variableUpdate', [{ key: 'updateList', value: [null, 3] }])],
    ['datasetConcat list of nulls', node('n', 'datasetConcatNode', [{ key: 'quotes', value: [null, { id: 7 }] }, { key: 'limit', value: 100 }])],
    ['chat history of numbers and half items', node('n', 'chatNode', [{ key: 'model', value: 'fake-llm' }, { key: 'userChatInput', value: 'hi' }, { key: 'history', value: [1, { obj: 'Human', value: [{ type: 'text' }] }] }])],
    ['chat quotes that are null', node('n', 'chatNode', [{ key: 'model', value: 'fake-llm' }, { key: 'userChatInput', value: 'hi' }, { key: 'quoteQA', value: [null, 'q'] }])],
  ];
  for (const [name, bad] of cases) {
    it(`${name}: the turn answers (the node reads what it can), never a 500`, async () => {
      const res = await chatTest(ownerToken, { nodes: [start, bad], edges: [edge('start', 'n')] }, { stream: false });
      expect(res.statusCode, res.body).toBe(200);
    });
  }

  it('a userSelect resumed with options that are null answers', async () => {
    const select = node('n', 'userSelect', [{ key: 'userSelectOptions', value: [null, { key: 'a', value: 'A' }] }]);
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/core/workflow/debug',
      headers: authHeaders(ownerToken),
      payload: { appId, nodes: [start, { ...select, isEntry: true }], edges: [edge('start', 'n')], variables: {} },
    });
    expect(res.statusCode, res.body).toBe(200);
  });
});

describe('datasets in a stored workflow', () => {
  let editorToken: string;
  beforeAll(async () => {
    const owner = await t.app.mongo.db.collection('users').findOne({ username: 'wf-owner' });
    const member = await t.app.mongo.db.collection('team_members').findOne({ userId: owner!._id });
    await createUser(t, { username: 'wf-editor', password: 'password-w3', teamId: String(member!.teamId), role: 'member', permission: 6 });
    editorToken = await login(t, 'wf-editor', 'password-w3');
    expect((await t.app.inject({ method: 'GET', url: `/api/core/dataset/detail?id=${secretDatasetId}`, headers: authHeaders(editorToken) })).statusCode).toBe(403);
  });

  const apps = () => t.app.mongo.db.collection('apps');
  const complete = (token: string, id: string, variables: Record<string, unknown> = {}) =>
    t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: authHeaders(token), payload: { appId: id, variables, messages: [{ role: 'user', content: 'vault code canteen' }] } });

  it('an editor cannot save a graph naming a dataset he cannot read: not at create, update or publish', async () => {
    const secret = searchGraph([{ datasetId: secretDatasetId }]);
    const created = await call(t, editorToken, 'POST', '/core/app/create', { name: 'Exfiltrate', type: 'advanced', modules: secret.nodes, edges: secret.edges });
    expect(created.status).toBe(403);
    expect(created.body.statusText).toBe('unAuthDataset');
    expect(await apps().countDocuments({ name: 'Exfiltrate' })).toBe(0);

    const open = searchGraph([{ datasetId: openDatasetId }]);
    const own = await ok(t, editorToken, 'POST', '/core/app/create', { name: 'Editor own', type: 'advanced', modules: open.nodes, edges: open.edges });
    const stored = (await apps().findOne({ name: 'Editor own' }))!.modulesJson;
    const versions = await t.app.mongo.db.collection('app_versions').countDocuments();
    const updated = await call(t, editorToken, 'POST', '/core/app/update', { appId: own, nodes: secret.nodes, edges: secret.edges });
    expect([updated.status, updated.body.statusText]).toEqual([403, 'unAuthDataset']);
    const published = await call(t, editorToken, 'POST', `/core/app/version/publish?appId=${own}`, { ...secret, isPublish: true, versionName: 'v2' });
    expect([published.status, published.body.statusText]).toEqual([403, 'unAuthDataset']);
    expect((await apps().findOne({ name: 'Editor own' }))!.modulesJson).toBe(stored);
    expect(await t.app.mongo.db.collection('app_versions').countDocuments()).toBe(versions);
  });

  it('an editor cannot bring the dataset in by a revert either: not as the edit state kept, not as the version restored', async () => {
    const open = searchGraph([{ datasetId: openDatasetId }]);
    const secret = searchGraph([{ datasetId: secretDatasetId }]);
    const shared = await createPublishedApp(t, ownerToken, 'Revert target', open);
    await ok(t, ownerToken, 'POST', '/core/app/update', { appId: shared, defaultPermission: 6 });
    const versions = t.app.mongo.db.collection('app_versions');
    const [firstVersion] = await versions.find({ appId: new ObjectId(shared) }).sort({ _id: 1 }).toArray();
    const before = await versions.countDocuments({ appId: new ObjectId(shared) });
    const kept = await call(t, editorToken, 'POST', '/core/app/version/revert', { appId: shared, versionId: String(firstVersion!._id), editNodes: secret.nodes, editEdges: secret.edges });
    expect([kept.status, kept.body.statusText]).toEqual([403, 'unAuthDataset']);
    expect(await versions.countDocuments({ appId: new ObjectId(shared) })).toBe(before);
    // A version naming it that the owner saved, then moved away from: the editor may not restore it.
    await ok(t, ownerToken, 'POST', `/core/app/version/publish?appId=${shared}`, { ...secret, isPublish: false, versionName: 'with secret' });
    const withSecret = await versions.findOne({ appId: new ObjectId(shared), versionName: 'with secret' });
    await ok(t, ownerToken, 'POST', `/core/app/version/publish?appId=${shared}`, { ...open, isPublish: true, versionName: 'without' });
    const restored = await call(t, editorToken, 'POST', '/core/app/version/revert', { appId: shared, versionId: String(withSecret!._id) });
    expect([restored.status, restored.body.statusText]).toEqual([403, 'unAuthDataset']);
    expect((await apps().findOne({ _id: new ObjectId(shared) }))!.modulesJson).not.toContain(secretDatasetId);
    // The owner may.
    await ok(t, ownerToken, 'POST', '/core/app/version/revert', { appId: shared, versionId: String(withSecret!._id) });
  });

  it('an editor may save the owner app that already names it, and chats with it as the owner chose; a copy he owns cannot search it', async () => {
    const ownersApp = await createPublishedApp(t, ownerToken, 'Vault answers', searchGraph([{ datasetId: secretDatasetId }]));
    await ok(t, ownerToken, 'POST', '/core/app/update', { appId: ownersApp, defaultPermission: 6 });
    // The editor renames a node and publishes: the dataset was there already.
    const renamed = searchGraph([{ datasetId: secretDatasetId }]);
    renamed.nodes[1] = { ...renamed.nodes[1]!, name: 'Vault search' } as (typeof renamed.nodes)[number];
    await ok(t, editorToken, 'POST', '/core/app/update', { appId: ownersApp, nodes: renamed.nodes, edges: renamed.edges });
    await ok(t, editorToken, 'POST', `/core/app/version/publish?appId=${ownersApp}`, { ...renamed, isPublish: true, versionName: 'v2' });
    const viaOwnersApp = await complete(editorToken, ownersApp);
    expect(viaOwnersApp.statusCode, viaOwnersApp.body).toBe(200);
    expect(viaOwnersApp.body).toContain('7741');

    // A copy is the editor's own app: it searches only what he can read.
    const { appId: copy } = await ok(t, editorToken, 'POST', '/core/app/copy', { appId: ownersApp });
    const viaCopy = await complete(editorToken, copy);
    expect(viaCopy.body).not.toContain('7741');
    expect(viaCopy.body).toContain('unAuthDataset');
  });

  it('a dataset list wired from a variable needs the rights of both the app owner and the caller', async () => {
    const wired = searchGraph(['VARIABLE_NODE_ID', 'datasetList']);
    const own = await createPublishedApp(t, editorToken, 'Editor wired', wired);
    const refused = await complete(editorToken, own, { datasetList: [{ datasetId: secretDatasetId }] });
    expect(refused.body).not.toContain('7741');
    expect(refused.body).toContain('unAuthDataset');
    const allowed = await complete(editorToken, own, { datasetList: [{ datasetId: openDatasetId }] });
    expect(allowed.statusCode, allowed.body).toBe(200);
    expect(allowed.body).toContain('canteen');
    // The owner's wired app reads the secret dataset for him, not for a caller who cannot read it.
    const ownersWired = await createPublishedApp(t, ownerToken, 'Owner wired', wired);
    await ok(t, ownerToken, 'POST', '/core/app/update', { appId: ownersWired, defaultPermission: 4 });
    expect((await complete(ownerToken, ownersWired, { datasetList: [{ datasetId: secretDatasetId }] })).body).toContain('7741');
    const readerTry = await complete(readerToken, ownersWired, { datasetList: [{ datasetId: secretDatasetId }] });
    expect(readerTry.body).not.toContain('7741');
    expect(readerTry.body).toContain('unAuthDataset');
    expect((await complete(readerToken, ownersWired, { datasetList: [{ datasetId: openDatasetId }] })).body).toContain('canteen');
    // Through a share link the caller is a stand-in (the link's creator, here the owner): a
    // variable cannot name a dataset there, or an editor could wire one to reach the owner's.
    const shareId = await ok(t, ownerToken, 'POST', '/support/outLink/create', { appId: ownersWired, type: 'share', name: 'wired link' });
    const viaLink = await t.app.inject({
      method: 'POST',
      url: '/api/v1/chat/completions',
      payload: { shareId, outLinkUid: 'visitor-wired', variables: { datasetList: [{ datasetId: secretDatasetId }] }, messages: [{ role: 'user', content: 'vault code canteen' }] },
    });
    expect(viaLink.body).not.toContain('7741');
    expect(viaLink.body).toContain('unAuthDataset');
  });

  it('an app run as a node reads its own datasets with its owner rights, and what the parent hands it with the parent rights too', async () => {
    // The owner's child app searches the secret dataset itself, and a list given as its variable.
    const literalChild = await createPublishedApp(t, ownerToken, 'Vault child', searchGraph([{ datasetId: secretDatasetId }]));
    const wiredChild = await createPublishedApp(t, ownerToken, 'Wired child', searchGraph(['VARIABLE_NODE_ID', 'datasetList']));
    for (const id of [literalChild, wiredChild]) await ok(t, ownerToken, 'POST', '/core/app/update', { appId: id, defaultPermission: 4 });
    const parentOf = (childId: string, extra: { key: string; value: unknown }[] = []) => ({
      nodes: [
        start,
        { nodeId: 'child', flowNodeType: 'appModule', name: 'Child', pluginId: childId, inputs: [{ key: 'userChatInput', value: ['start', 'userChatInput'] }, { key: 'history', value: 0 }, ...extra], outputs: [{ id: 'answerText', key: 'answerText' }] },
      ],
      edges: [edge('start', 'child')],
      chatConfig: {},
    });
    // As chatting with the child itself would: its own dataset, chosen by its owner.
    const viaLiteral = await complete(editorToken, await createPublishedApp(t, editorToken, 'Parent literal', parentOf(literalChild)));
    expect(viaLiteral.statusCode, viaLiteral.body).toBe(200);
    expect(viaLiteral.body).toContain('7741');
    // A list the editor hands the child: the editor cannot read it, so the child may not search it for him.
    const handed = await createPublishedApp(t, editorToken, 'Parent handing', parentOf(wiredChild, [{ key: 'datasetList', value: [{ datasetId: secretDatasetId }] }]));
    const viaHanded = await complete(editorToken, handed);
    expect(viaHanded.body).not.toContain('7741');
    expect(viaHanded.body).toContain('unAuthDataset');
    const openHanded = await createPublishedApp(t, editorToken, 'Parent handing open', parentOf(wiredChild, [{ key: 'datasetList', value: [{ datasetId: openDatasetId }] }]));
    expect((await complete(editorToken, openHanded)).body).toContain('canteen');
  });
});
