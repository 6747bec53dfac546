import { expect } from 'vitest';
import { call, ok } from '../integration/apps-helpers.js';
import { startChatApp } from '../integration/chat-helpers.js';
import { multipart } from '../fixtures/datasets/client.js';
import type { TestApp } from './app.js';
import type { FakeOpenAi } from './fake-openai.js';
import { authHeaders, createUser, login } from './platform.js';

/**
 * One populated platform for the guard tests: team A (an owner, a read-only member, a
 * collaborator) with resources of every kind in two variants, and team B (an owner).
 *
 * - `private`: default permission 0 — the read-only member has no access at all.
 * - `shared`: default permission 4 (team read) — the member may read but not write.
 *
 * Every text of team A carries a marker so a response can be searched for leaks:
 * `ZQP` private content (the owner's chats, private resources), `ZQS` content the member may
 * read, `ZQW` write-level content (workflow internals, version names, share links, keys).
 */
export const MARK = { private: 'ZQP', shared: 'ZQS', write: 'ZQW', anyTeamA: 'ZQ' } as const;

export type Variant = 'private' | 'shared';
export const VARIANTS: Variant[] = ['private', 'shared'];

export interface AppResources {
  folderId: string;
  appId: string;
  simpleAppId: string;
  httpPluginId: string;
  versionId: string;
  chatId: string;
  humanItemId: string;
  aiItemId: string;
  inputGuideId: string;
  outLinkId: string;
  shareId: string;
  apiKeyId: string;
}

export interface DatasetResources {
  folderId: string;
  datasetId: string;
  collectionFolderId: string;
  collectionId: string;
  dataId: string;
  fileId: string;
  csvFileId: string;
  /** Only when the world was built with a reachable page (`linkUrl`). */
  linkCollectionId?: string;
}

export interface Person {
  username: string;
  password: string;
  token: string;
  tmbId: string;
  teamId: string;
}

export interface World {
  t: TestApp;
  fake: FakeOpenAi;
  ownerA: Person;
  /** Team A member with team permission 4 (read only). */
  member: Person;
  /** Team A member, collaborator (read) on the apps; the subject of collaborator routes. */
  collaborator: Person;
  ownerB: Person;
  apps: Record<Variant, AppResources>;
  datasets: Record<Variant, DatasetResources>;
  /** The owner's global API key. */
  globalKey: { id: string; key: string };
  close: () => Promise<void>;
}

const ref = (nodeId: string, key: string) => [nodeId, key];

/** start → answer; plus an unconnected HTTP node whose header is write-level data (never runs). */
export function worldGraph(marker: string) {
  return {
    nodes: [
      { nodeId: 'start', flowNodeType: 'workflowStart', name: 'Start', inputs: [{ key: 'userChatInput', valueType: 'string', value: '' }], outputs: [{ id: 'userChatInput', key: 'userChatInput', valueType: 'string' }] },
      { nodeId: 'answer', flowNodeType: 'answerNode', name: 'Answer', inputs: [{ key: 'text', value: `${marker} answer to {{$start.userChatInput$}}` }], outputs: [] },
      {
        nodeId: 'hidden',
        flowNodeType: 'httpRequest468',
        name: 'Hidden call',
        inputs: [
          { key: 'system_httpMethod', value: 'POST' },
          { key: 'system_httpReqUrl', value: 'http://127.0.0.1:9/hidden' },
          { key: 'system_httpHeader', value: [{ key: 'x-secret', type: 'string', value: `${MARK.write}-secret-header` }] },
          { key: 'userChatInput', value: ref('start', 'userChatInput') },
        ],
        outputs: [],
      },
    ],
    edges: [{ source: 'start', sourceHandle: 'start-source-right', target: 'answer', targetHandle: 'answer-target-left' }],
    chatConfig: { welcomeText: `${marker} welcome` },
  };
}

const PETS_SCHEMA = JSON.stringify({
  openapi: '3.0.0',
  info: { title: 'pets', version: '1' },
  servers: [{ url: 'http://127.0.0.1:9' }],
  paths: { '/pets': { get: { operationId: 'listPets', summary: 'List pets', responses: { '200': { description: 'ok' } } } } },
});

async function person(t: TestApp, username: string, extra: { teamId?: string; permission?: number } = {}): Promise<Person> {
  const password = `password-${username}`;
  const created = await createUser(t, { username, password, ...(extra.teamId ? { teamId: extra.teamId, role: 'member' as const, permission: extra.permission } : {}) });
  return { username, password, token: await login(t, username, password), tmbId: created.tmbId, teamId: created.teamId };
}

/** Finds the id of the item named `name` in a list answer. */
function idNamed(list: { _id: string; name: string }[], name: string): string {
  const found = list.find((item) => item.name === name);
  expect(found, `${name} in ${JSON.stringify(list).slice(0, 300)}`).toBeTruthy();
  return found!._id;
}

async function upload(t: TestApp, token: string, name: string, content: string): Promise<string> {
  const body = multipart({ bucketName: 'dataset' }, { name, content, type: 'text/plain' });
  const response = await t.app.inject({ method: 'POST', url: '/api/common/file/upload', headers: { ...authHeaders(token), ...body.headers }, payload: body.payload });
  expect(response.statusCode, response.body).toBe(200);
  return response.json().data.fileId as string;
}

async function buildApps(t: TestApp, owner: Person, collaborator: Person, variant: Variant): Promise<AppResources> {
  const marker = variant === 'private' ? MARK.private : MARK.shared;
  const tok = owner.token;
  const folderName = `${marker} app folder`;
  await ok(t, tok, 'POST', '/core/app/folder/create', { name: folderName, parentId: null });
  const folderId = idNamed(await ok(t, tok, 'POST', '/core/app/list', { parentId: null, type: 'folder' }), folderName);
  await ok(t, tok, 'POST', '/core/app/update', { appId: folderId, defaultPermission: variant === 'private' ? 0 : 4 });

  const graph = worldGraph(marker);
  const appId: string = await ok(t, tok, 'POST', '/core/app/create', { name: `${marker} app`, type: 'advanced', parentId: folderId, modules: graph.nodes, edges: graph.edges, chatConfig: graph.chatConfig });
  await ok(t, tok, 'POST', `/core/app/version/publish?appId=${appId}`, { ...graph, isPublish: true, versionName: `${marker} version` });
  const versionId: string = (await ok(t, tok, 'POST', '/core/app/version/list', { appId })).list[0]._id;
  const simpleAppId: string = await ok(t, tok, 'POST', '/core/app/create', {
    name: `${marker} simple app`,
    type: 'simple',
    parentId: folderId,
    modules: [{ nodeId: 'workflowStartNodeId', flowNodeType: 'workflowStart', inputs: [], outputs: [] }],
    edges: [],
  });
  await ok(t, tok, 'POST', '/core/app/httpPlugin/create', { name: `${marker} http plugin`, parentId: folderId, pluginData: { apiSchemaStr: PETS_SCHEMA, customHeaders: `{"x-key":"${MARK.write}"}` } });
  const httpPluginId = idNamed(await ok(t, tok, 'POST', '/core/app/list', { parentId: folderId, type: 'httpPlugin' }), `${marker} http plugin`);
  await ok(t, tok, 'POST', '/core/app/collaborator/update', { appId, tmbIds: [collaborator.tmbId], permission: 4 });

  const chatId = `zq-chat-${variant}`;
  const humanItemId = `zq-q-${variant}`;
  const aiItemId = `zq-a-${variant}`;
  const completion = await t.app.inject({
    method: 'POST',
    url: '/api/v1/chat/completions',
    headers: authHeaders(tok),
    payload: { appId, chatId, responseChatItemId: aiItemId, messages: [{ role: 'user', content: `${MARK.private} question`, dataId: humanItemId }] },
  });
  expect(completion.statusCode, completion.body).toBe(200);

  await ok(t, tok, 'POST', '/core/chat/inputGuide/create', { appId, textList: [`${marker} guide`] });
  const inputGuideId: string = (await ok(t, tok, 'POST', '/core/chat/inputGuide/list', { appId })).list[0]._id;
  const shareId: string = await ok(t, tok, 'POST', '/support/outLink/create', { appId, type: 'share', name: `${MARK.write} link` });
  const outLinkId: string = (await ok(t, tok, 'GET', '/support/outLink/list', { appId, type: 'share' }))[0]._id;
  await ok(t, tok, 'POST', '/support/openapi/create', { appId, name: `${MARK.write} app key` });
  const apiKeyId: string = (await ok(t, tok, 'GET', '/support/openapi/list', { appId }))[0]._id;
  return { folderId, appId, simpleAppId, httpPluginId, versionId, chatId, humanItemId, aiItemId, inputGuideId, outLinkId, shareId, apiKeyId };
}

async function buildDatasets(t: TestApp, owner: Person, variant: Variant, linkUrl?: string): Promise<DatasetResources> {
  const marker = variant === 'private' ? MARK.private : MARK.shared;
  const tok = owner.token;
  const folderName = `${marker} dataset folder`;
  await ok(t, tok, 'POST', '/core/dataset/folder/create', { name: folderName, parentId: null });
  const folderId = idNamed(await ok(t, tok, 'POST', '/core/dataset/list', { parentId: null, type: 'folder' }), folderName);
  await ok(t, tok, 'POST', '/core/dataset/update', { id: folderId, defaultPermission: variant === 'private' ? 0 : 4 });
  const datasetId: string = await ok(t, tok, 'POST', '/core/dataset/create', { name: `${marker} dataset`, parentId: folderId });
  const collectionFolderId: string = await ok(t, tok, 'POST', '/core/dataset/collection/create', { datasetId, name: `${marker} collection folder`, type: 'folder' });
  const created = await ok(t, tok, 'POST', '/core/dataset/collection/create/text', { datasetId, parentId: collectionFolderId, name: `${marker} notes`, text: `${marker} first paragraph.\n\n${marker} second paragraph.` });
  const collectionId: string = created.collectionId;
  const dataId: string = await ok(t, tok, 'POST', '/core/dataset/data/insertData', { collectionId, q: `${marker} question`, a: `${marker} answer` });
  const fileId = await upload(t, tok, 'zq-notes.txt', `${marker} file text for previews and collections.`);
  const csvFileId = await upload(t, tok, 'zq-table.csv', `q,a\n${marker} csv q,${marker} csv a\n`);
  let linkCollectionId: string | undefined;
  if (linkUrl) {
    const link = await ok(t, tok, 'POST', '/core/dataset/collection/create/link', { datasetId, link: linkUrl });
    linkCollectionId = link.collectionId;
  }
  return { folderId, datasetId, collectionFolderId, collectionId, dataId, fileId, csvFileId, linkCollectionId };
}

/**
 * Builds the world on a fresh app with the fake model provider. `linkUrl` (a page the app may
 * fetch; set `SSRF_ALLOW_PRIVATE` in `env` for a local one) adds a link collection per dataset.
 */
export async function buildWorld(options: { env?: Record<string, string>; linkUrl?: string } = {}): Promise<World> {
  const { t, fake } = await startChatApp(() => ({ SSRF_ALLOW_PRIVATE: 'false', ...options.env }));
  const ownerA = await person(t, 'zq-owner-a');
  const member = await person(t, 'zq-member', { teamId: ownerA.teamId, permission: 4 });
  const collaborator = await person(t, 'zq-collaborator', { teamId: ownerA.teamId, permission: 4 });
  const ownerB = await person(t, 'zq-owner-b');
  const apps = { private: await buildApps(t, ownerA, collaborator, 'private'), shared: await buildApps(t, ownerA, collaborator, 'shared') };
  const datasets = { private: await buildDatasets(t, ownerA, 'private', options.linkUrl), shared: await buildDatasets(t, ownerA, 'shared', options.linkUrl) };
  const key: string = await ok(t, ownerA.token, 'POST', '/support/openapi/create', { name: `${MARK.write} global key` });
  const globalKey = { id: idNamed(await ok(t, ownerA.token, 'GET', '/support/openapi/list', {}), `${MARK.write} global key`), key };
  // Sanity: the member really is read-only and really reads the shared variant only.
  expect((await call(t, member.token, 'GET', '/core/app/detail', { appId: apps.shared.appId })).status).toBe(200);
  expect((await call(t, member.token, 'GET', '/core/app/detail', { appId: apps.private.appId })).status).toBe(403);
  return {
    t,
    fake,
    ownerA,
    member,
    collaborator,
    ownerB,
    apps,
    datasets,
    globalKey,
    close: async () => {
      await t.close();
      await fake.close();
    },
  };
}

type IdSource = (w: World, v: Variant) => unknown;

/** Id parameters that name the same kind of resource on every route. */
const ID_BY_NAME: Record<string, IdSource> = {
  appId: (w, v) => w.apps[v].appId,
  datasetId: (w, v) => w.datasets[v].datasetId,
  collectionId: (w, v) => w.datasets[v].collectionId,
  chatId: (w, v) => w.apps[v].chatId,
  chatItemId: (w, v) => w.apps[v].aiItemId,
  contentId: (w, v) => w.apps[v].humanItemId,
  versionId: (w, v) => w.apps[v].versionId,
  tmbId: (w) => w.collaborator.tmbId,
  tmbIds: (w) => [w.collaborator.tmbId],
  fileId: (w, v) => w.datasets[v].fileId,
  sourceId: (w, v) => w.datasets[v].fileId,
  dataIdList: (w, v) => [w.apps[v].inputGuideId],
};

/** Credentials of other realms (share links, team spaces), never a resource of the caller's team. */
const CREDENTIAL_PARAMS = new Set(['shareId', 'outLinkUid', 'teamId', 'teamToken']);

/**
 * Reviewed per-route meanings of ambiguous id names (`id`, `_id`, `parentId`, `dataId`,
 * `responseChatItemId`, …). `null` = not a resource of the caller's team (system plugin ids,
 * templates, billing ids, a move target left out so the request does not move anything).
 */
const ID_BY_ROUTE: Record<string, Record<string, IdSource | null>> = {
  '/api/core/app/create': { parentId: (w, v) => w.apps[v].folderId },
  '/api/core/app/folder/create': { parentId: (w, v) => w.apps[v].folderId },
  '/api/core/app/folder/path': { parentId: (w, v) => w.apps[v].folderId },
  '/api/core/app/httpPlugin/create': { parentId: (w, v) => w.apps[v].folderId },
  '/api/core/app/list': { parentId: (w, v) => w.apps[v].folderId },
  '/api/core/app/update': { parentId: null },
  '/api/core/app/plugin/getSystemPluginTemplates': { parentId: null },
  '/api/core/app/plugin/path': { parentId: null },
  '/api/core/app/template/detail': { templateId: null },
  '/api/core/chat/feedback/closeCustom': { dataId: (w, v) => w.apps[v].aiItemId },
  // 4.8.10 names: chatItemId is the answer item, dataId the dataset entry it becomes.
  '/api/core/chat/feedback/adminUpdate': { chatItemId: (w, v) => w.apps[v].aiItemId, dataId: (w, v) => w.datasets[v].dataId, feedbackDataId: null },
  '/api/core/chat/feedback/updateUserFeedback': { dataId: (w, v) => w.apps[v].aiItemId },
  '/api/core/chat/getResData': { dataId: (w, v) => w.apps[v].aiItemId },
  '/api/core/chat/inputGuide/update': { dataId: (w, v) => w.apps[v].inputGuideId },
  '/api/v1/chat/completions': { responseChatItemId: null },
  '/api/plugins/customFeedback/index': { responseChatItemId: (w, v) => w.apps[v].aiItemId },
  '/api/plugins/customFeedback/v2/index': { responseChatItemId: (w, v) => w.apps[v].aiItemId },
  '/api/v1/embeddings': { billId: null },
  '/api/core/dataset/data/pushData': { billId: null },
  // externalFileId names a file of an external system (read through the dataset's externalReadUrl), not a resource here.
  '/api/core/dataset/collection/create': { parentId: (w, v) => w.datasets[v].collectionFolderId, externalFileId: null },
  '/api/core/dataset/collection/create/csvTable': { parentId: (w, v) => w.datasets[v].collectionFolderId, fileId: (w, v) => w.datasets[v].csvFileId },
  '/api/core/dataset/collection/create/fileId': { parentId: (w, v) => w.datasets[v].collectionFolderId },
  '/api/core/dataset/collection/create/link': { parentId: (w, v) => w.datasets[v].collectionFolderId },
  '/api/core/dataset/collection/create/text': { parentId: (w, v) => w.datasets[v].collectionFolderId },
  '/api/core/dataset/collection/list': { parentId: (w, v) => w.datasets[v].collectionFolderId },
  '/api/core/dataset/collection/scrollList': { parentId: (w, v) => w.datasets[v].collectionFolderId },
  '/api/core/dataset/collection/paths': { parentId: (w, v) => w.datasets[v].collectionFolderId },
  '/api/core/dataset/collection/delete': { id: (w, v) => w.datasets[v].collectionId },
  '/api/core/dataset/collection/detail': { id: (w, v) => w.datasets[v].collectionId },
  '/api/core/dataset/collection/update': { id: (w, v) => w.datasets[v].collectionId, parentId: null },
  '/api/core/dataset/create': { parentId: (w, v) => w.datasets[v].folderId },
  '/api/core/dataset/folder/create': { parentId: (w, v) => w.datasets[v].folderId },
  '/api/core/dataset/list': { parentId: (w, v) => w.datasets[v].folderId },
  '/api/core/dataset/paths': { parentId: (w, v) => w.datasets[v].folderId },
  '/api/core/dataset/delete': { id: (w, v) => w.datasets[v].datasetId },
  '/api/core/dataset/detail': { id: (w, v) => w.datasets[v].datasetId },
  '/api/core/dataset/update': { id: (w, v) => w.datasets[v].datasetId, parentId: null },
  '/api/core/dataset/data/delete': { id: (w, v) => w.datasets[v].dataId },
  '/api/core/dataset/data/detail': { id: (w, v) => w.datasets[v].dataId },
  '/api/core/dataset/data/update': { dataId: (w, v) => w.datasets[v].dataId },
  '/api/support/openapi/delete': { id: (w, v) => w.apps[v].apiKeyId },
  '/api/support/openapi/update': { _id: (w, v) => w.apps[v].apiKeyId },
  '/api/support/outLink/delete': { id: (w, v) => w.apps[v].outLinkId },
  '/api/support/outLink/update': { _id: (w, v) => w.apps[v].outLinkId },
  '/api/system/img/{id}': { id: null },
};

export const UNMAPPED = Symbol('unmapped id parameter');

/**
 * The world resource an id parameter of a route names, `undefined` when the parameter is not a
 * team resource (leave it out), or `UNMAPPED` when nobody has reviewed what it means there.
 */
export function worldId(w: World, path: string, name: string, variant: Variant): unknown {
  const byRoute = ID_BY_ROUTE[path];
  if (byRoute && name in byRoute) return byRoute[name]?.(w, variant);
  if (CREDENTIAL_PARAMS.has(name)) return undefined;
  const byName = ID_BY_NAME[name];
  return byName ? byName(w, variant) : UNMAPPED;
}
