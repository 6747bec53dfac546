import type { FastifyInstance, InjectOptions } from 'fastify';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { type FakeModelProvider, startFakeModelProvider } from '../helpers/fake-model-provider.js';
import { createUser, login } from '../helpers/platform.js';
import { bearer, login as clusterLogin } from '../fixtures/cluster/helpers.js';
import { createApp, createFolder, ok } from './apps-helpers.js';
import { branchGraph, createPublishedApp } from './chat-helpers.js';

/**
 * The hot routes answer through serialisers compiled from their response schemas. For realistic
 * data (texts with quotes, escapes, emoji and U+FFFD; nulls, absent fields, open
 * objects), each reply must be byte for byte what JSON.stringify writes for the same value: the
 * value is captured just before serialisation and written with JSON.stringify for comparison.
 */
let t: TestApp;
let provider: FakeModelProvider;
let owner: string;
let member: string;
const plain = new Map<string, { json: string; compiled: boolean }>();

/** Texts that exercise every escaping branch of the serialiser. */
const TRICKY = [
  'Plain',
  'Quote " and backslash \\ and slash /',
  'Line\nbreak\ttab\r\u0001\u001f control',
  'Emoji 😀 and CJK 你好 and RTL שלום',
  // What a lone surrogate in a request becomes (infra/input-guard.ts mends it, as BSON would).
  'Replacement \ufffd and \ufffd end',
  '</script><b>&amp;</b>',
  `Long ${'x'.repeat(60)} "quoted" ${'y'.repeat(6000)} \\ end`,
];

function captureReplies(app: FastifyInstance): void {
  app.addHook('preSerialization', async (request, _reply, payload) => {
    const schema = request.routeOptions.schema as { response?: Record<string, unknown> } | undefined;
    plain.set(request.id, { json: JSON.stringify(payload), compiled: Boolean(schema?.response?.['200']) });
    return payload;
  });
}

/** Replies already checked: a memoised answer (infra/answer-memo.ts) sends them again as they are. */
const checked = new Set<string>();

/**
 * Calls a hot route and checks its compiled reply against JSON.stringify of the same value; a
 * reply sent from an answer memo (no serialisation this time) must be bytes already checked.
 */
async function sameAsJsonStringify(options: InjectOptions) {
  const response = await t.app.inject(options);
  expect(response.statusCode, response.body).toBe(200);
  const reference = plain.get(String(response.headers['x-request-id']));
  if (reference === undefined) {
    expect(checked.has(response.body), `${options.method} ${options.url}: a memoised reply repeats a checked one`).toBe(true);
  } else {
    expect(reference.compiled, `${options.method} ${options.url} has a compiled serialiser`).toBe(true);
    expect(response.body).toBe(reference.json);
    checked.add(response.body);
  }
  // biome-ignore lint/suspicious/noExplicitAny: replies are read loosely
  return response.json() as any;
}

const api = (token: string, method: 'GET' | 'POST', url: string, payload?: Record<string, unknown>): InjectOptions =>
  method === 'GET'
    ? { method, url: `/api${url}${payload ? `?${new URLSearchParams(payload as Record<string, string>)}` : ''}`, headers: { token } }
    : { method, url: `/api${url}`, headers: { token }, payload: payload ?? {} };

let folderId: string;
let chatAppId: string;
let datasetId: string;
let collectionId: string;

beforeAll(async () => {
  provider = await startFakeModelProvider((request) => {
    const documents = (request.body as { documents: string[] }).documents;
    return { json: { results: documents.map((_text, index) => ({ index, relevance_score: 1 / (index + 2) })) } };
  });
  const dir = await mkdtemp(join(tmpdir(), 'schemas-serialization-'));
  await writeFile(join(dir, 'config.json'), JSON.stringify({ reRankModels: [{ model: 'fake-rerank', name: 'Fake rerank', requestUrl: `${provider.baseUrl}/rerank` }] }));
  t = await buildTestApp({ MODEL_CONFIG_PATH: join(dir, 'config.json') }, captureReplies);
  const created = await createUser(t, { username: 'serial-owner', password: 'password-o1' });
  const { tmbId: memberTmbId } = await createUser(t, { username: 'serial-member', password: 'password-m1', teamId: created.teamId, role: 'member', permission: 4 });
  owner = await login(t, 'serial-owner', 'password-o1');
  member = await login(t, 'serial-member', 'password-m1');

  // Apps: a folder shared with the member, apps of each type with tricky names, an HTTP plugin.
  folderId = await createFolder(t, owner, TRICKY[1]!);
  for (const [index, text] of TRICKY.entries()) {
    await createApp(t, owner, { name: text.slice(0, 200), intro: text.slice(0, 5000), avatar: index % 2 ? '/icon/logo.svg' : '', parentId: index % 2 ? folderId : null, type: index % 3 ? 'simple' : 'advanced' });
  }
  await ok(t, owner, 'POST', '/core/app/httpPlugin/create', {
    name: 'Pets "API"',
    parentId: folderId,
    pluginData: { apiSchemaStr: JSON.stringify({ openapi: '3.0.0', info: { title: 'p', version: '1' }, paths: {} }), customHeaders: '{"x-key":"k"}' },
  });
  await ok(t, owner, 'POST', '/core/app/collaborator/update', { appId: folderId, tmbIds: [memberTmbId], permission: 4 });

  // Chats: windows with and without a custom title, one pinned.
  chatAppId = await createPublishedApp(t, owner, 'Branch bot', branchGraph);
  for (const [index, text] of TRICKY.slice(0, 4).entries()) {
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/v1/chat/completions',
      headers: { token: owner },
      payload: { appId: chatAppId, chatId: `chat-${index}`, messages: [{ role: 'user', content: text }] },
    });
    expect(response.statusCode, response.body).toBe(200);
  }
  await ok(t, owner, 'POST', '/core/chat/updateHistory', { appId: chatAppId, chatId: 'chat-1', customTitle: TRICKY[3], top: true });

  // A dataset with tricky data items, trained, for the data lists and the search.
  datasetId = await ok(t, owner, 'POST', '/core/dataset/create', { name: 'Serial "data"' });
  collectionId = await ok(t, owner, 'POST', '/core/dataset/collection/create', { datasetId, name: TRICKY[2], type: 'virtual' });
  await ok(t, owner, 'POST', '/core/dataset/data/pushData', { collectionId, data: TRICKY.map((q, chunkIndex) => ({ q: `${q} password reset`, a: chunkIndex % 2 ? TRICKY[chunkIndex - 1] : '', chunkIndex })) });
  await ok(t, owner, 'POST', '/core/dataset/data/insertData', { collectionId, q: 'How do I reset my password?', a: 'Open "settings".' });
  await t.app.datasets.trainingWorker.drain();
}, 120_000);

afterAll(async () => {
  await t?.close();
  await provider?.close();
});

describe('compiled replies equal JSON.stringify of the same value', () => {
  it('core/app/list: whole team, a folder, recent chats, a search; as owner and as a member', async () => {
    const all = await sameAsJsonStringify(api(owner, 'POST', '/core/app/list', {}));
    expect(all.data.length).toBeGreaterThanOrEqual(TRICKY.length + 3);
    const plugin = all.data.find((app: { type: string }) => app.type === 'httpPlugin');
    expect(Object.keys(plugin.pluginData)).toEqual(expect.arrayContaining(['apiSchemaStr', 'customHeaders']));
    expect(Object.keys(all.data[0].permission)).toEqual(['value', 'isOwner', 'hasManagePer', 'hasWritePer', 'hasReadPer']);
    await sameAsJsonStringify(api(owner, 'GET', '/core/app/list', { parentId: folderId }));
    await sameAsJsonStringify(api(owner, 'GET', '/core/app/list', { getRecentlyChat: 'true' }));
    await sameAsJsonStringify(api(owner, 'POST', '/core/app/list', { searchKey: 'Emoji' }));
    const shared = await sameAsJsonStringify(api(member, 'POST', '/core/app/list', { parentId: folderId }));
    const hidden = shared.data.find((app: { type: string }) => app.type === 'httpPlugin');
    expect(hidden.pluginData.apiSchemaStr).toBeUndefined();
  });

  it('core/chat/getHistories: custom titles, a pinned window, POST and GET', async () => {
    const histories = await sameAsJsonStringify(api(owner, 'POST', '/core/chat/getHistories', { appId: chatAppId }));
    expect(histories.data).toHaveLength(4);
    expect(histories.data[0]).toMatchObject({ chatId: 'chat-1', customTitle: TRICKY[3], top: true, appId: chatAppId });
    await sameAsJsonStringify(api(owner, 'GET', '/core/chat/getHistories', { appId: chatAppId }));
  });

  it('core/dataset/data/list and v2/list: pages, offsets and a search text', async () => {
    const page = await sameAsJsonStringify(api(owner, 'POST', '/core/dataset/data/list', { collectionId, pageNum: 1, pageSize: 30 }));
    expect(page.data).toMatchObject({ pageNum: 1, pageSize: 30, total: page.data.data.length });
    expect(page.data.total).toBeGreaterThanOrEqual(TRICKY.length - 1);
    const texts = page.data.data.map((item: { q: string; a: string }) => item.q + item.a).join('');
    for (const needle of ['"', '\\', '\n', '😀', '</script>']) expect(texts).toContain(needle);
    await sameAsJsonStringify(api(owner, 'GET', '/core/dataset/data/list', { collectionId, pageNum: '2', pageSize: '3', searchText: 'password' }));
    const v2 = await sameAsJsonStringify(api(owner, 'POST', '/core/dataset/data/v2/list', { collectionId, offset: 2, pageSize: 4 }));
    expect(v2.data.list).toHaveLength(4);
    await sameAsJsonStringify(api(owner, 'GET', '/core/dataset/data/v2/list', { collectionId }));
  });

  it('core/dataset/searchTest: each mode, with rerank and a similarity filter', async () => {
    for (const searchMode of ['embedding', 'fullTextRecall', 'mixedRecall']) {
      const result = await sameAsJsonStringify(api(owner, 'POST', '/core/dataset/searchTest', { datasetId, text: 'reset password', searchMode }));
      expect(result.data.list.length).toBeGreaterThan(0);
      expect(result.data.searchMode).toBe(searchMode);
    }
    const reranked = await sameAsJsonStringify(api(owner, 'GET', '/core/dataset/searchTest', { datasetId, text: 'reset password', searchMode: 'mixedRecall', usingReRank: 'true', similarity: '0.1' }));
    expect(reranked.data).toMatchObject({ usingReRank: true, usingSimilarityFilter: true });
    expect(reranked.data.list[0].score.map((score: { type: string }) => score.type)).toContain('reRank');
  });

  it('the node list: labels and annotations with dots, nodes with and without pods, every page size', async () => {
    const nodes = Array.from({ length: 12 }, (_, index) => ({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: `serial-${String(index).padStart(2, '0')}`,
        ...(index % 3 ? { uid: `00000000-0000-4000-8000-${String(index).padStart(12, '0')}`, resourceVersion: String(index + 7) } : {}),
        creationTimestamp: new Date(Date.UTC(2024, 0, 1 + index)).toISOString(),
        labels: { 'kubernetes.io/hostname': `serial-${index}`, 'node-role.kubernetes.io/worker': '', zone: TRICKY[index % 4]!.slice(0, 20) },
        ...(index % 2 ? { annotations: { 'kubesphere.io/alias-name': TRICKY[index % TRICKY.length]!.slice(0, 50), 'a.b/c': '"x"' } } : {}),
        managedFields: [{ manager: 'kubelet', operation: 'Update', fieldsV1: { 'f:status': {} } }],
      },
      spec: { podCIDR: `10.0.${index}.0/24`, ...(index === 5 ? { unschedulable: true, taints: [{ key: 'k', effect: 'NoSchedule' }] } : {}) },
      status: {
        capacity: { cpu: '4', memory: '8Gi', pods: '110' },
        allocatable: { cpu: '3500m', memory: '7Gi', pods: '110' },
        conditions: [{ type: 'Ready', status: index === 7 ? 'False' : 'True', lastHeartbeatTime: '2024-01-01T00:00:00Z', message: TRICKY[2] }],
        nodeInfo: { kubeletVersion: 'v1.26.5', architecture: 'amd64' },
      },
    }));
    const pod = (name: string, nodeName: string) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'default', uid: `pod-${name}` },
      spec: { nodeName, containers: [{ name: 'c0', image: 'nginx', resources: { requests: { cpu: '250m', memory: '128Mi' }, limits: { cpu: '1', memory: '1Gi' } } }] },
      status: { phase: 'Running' },
    });
    const headers = bearer((await clusterLogin(t.app)).access_token);
    const list = (query: string) => sameAsJsonStringify({ method: 'GET', url: `/kapis/resources.platform.io/v1alpha3/nodes${query}`, headers });
    await t.app.cluster.nodes.importNodes(JSON.stringify({ apiVersion: 'v1', kind: 'List', items: nodes }));
    expect((await list('')).totalItems).toBe(12);
    // With pods, each listed node gains usage annotations (appended to its own, or a new map).
    await t.app.cluster.nodes.importPods(JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [pod('web-a', 'serial-01'), pod('web-b', 'serial-02')] }));
    for (const query of ['', '?limit=5&page=2&sortBy=name', '?labelSelector=zone&ascending=true', '?name=serial-1', '?annotation=a.b/c']) {
      expect((await list(query)).items.length, query).toBeGreaterThan(0);
    }
    expect(await list('?names=nothing')).toEqual({ items: [], totalItems: 0 });
    const all = await sameAsJsonStringify({ method: 'GET', url: '/kapis/resources.kubesphere.io/v1alpha3/nodes', headers });
    const byName = (name: string) => all.items.find((node: { metadata: { name: string } }) => node.metadata.name === name);
    expect(byName('serial-05').spec.taints).toEqual([{ key: 'k', effect: 'NoSchedule' }]);
    expect(Object.keys(byName('serial-02').metadata.annotations).length).toBeGreaterThan(0);
    expect(byName('serial-01').metadata.managedFields).toEqual(nodes[1]!.metadata.managedFields);
  });
});
