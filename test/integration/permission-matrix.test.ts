import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { multipart } from '../fixtures/datasets/client.js';
import { diffSnapshots, type SnapshotTracker, snapshot, snapshotTracker } from '../helpers/db-snapshot.js';
import { ID_NAME, loadOperations, type Operation, queryString, sample } from '../helpers/openapi-inputs.js';
import { buildWorld, MARK, type Person, UNMAPPED, type Variant, VARIANTS, type World, worldId } from '../helpers/world.js';
import { type LocalSite, startLocalSite } from '../helpers/local-site.js';

// For every id-taking route: another team's owner and a read-only member of the same team are
// refused and nothing changes in the database; the member still reads what team read allows.
// Ids come from openapi/openapi.json (id-like parameter names) mapped to the world's resources.

/**
 * - `refuse`: 403 or 404 (never 401 for a valid session, never success), and nothing changes.
 * - `allow`: success (the member may read this on the shared variant).
 * - `scoped`: the route acts only on the caller's own records (success or refusal both fine),
 *   and nothing of team A changes.
 */
type Expectation = 'refuse' | 'allow' | 'scoped';

interface Row {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  /** The read-only member on the `shared` variant; on `private` every non-scoped row is refused. */
  member: Expectation;
  /** Another team's owner (default: refuse). */
  other?: Expectation;
  /** Non-id fields of the request (ids come from the world); these win over the world's ids. */
  extra?: (w: World, v: Variant) => Record<string, unknown>;
  /** Why the owner's own request is not checked as a control (it must succeed otherwise). */
  noControl?: string;
  multipart?: (w: World, v: Variant) => { fields: Record<string, string>; file: { name: string; content: string } };
}

const probeGraph = {
  nodes: [
    { nodeId: 'start', flowNodeType: 'workflowStart', name: 'Start', inputs: [], outputs: [{ id: 'userChatInput', key: 'userChatInput', valueType: 'string' }] },
    { nodeId: 'answer', flowNodeType: 'answerNode', name: 'Answer', inputs: [{ key: 'text', value: 'probe answer' }], outputs: [] },
  ],
  edges: [{ source: 'start', sourceHandle: 'start-source-right', target: 'answer', targetHandle: 'answer-target-left' }],
};
const PETS = JSON.stringify({ openapi: '3.0.0', info: { title: 'p', version: '1' }, paths: { '/x': { get: { operationId: 'x', responses: { '200': { description: 'ok' } } } } } });
const messages = [{ role: 'user', content: 'probe question' }];

/**
 * The reviewed table: one row per id-taking route, in execution order (destructive rows last,
 * ordered so that each still finds its resource). Member expectations follow the contract
 * notes' permission tables (read / write / manage / owner per route) and the decisions: version
 * list and detail need write; moves and permission changes need manage; app-bound keys, share
 * links and channel secrets need manage.
 */
const ROWS: Row[] = [
  // Apps: read
  { method: 'GET', path: '/api/core/app/detail', member: 'allow' },
  { method: 'POST', path: '/api/core/app/list', member: 'allow' },
  { method: 'GET', path: '/api/core/app/folder/path', member: 'allow' },
  { method: 'GET', path: '/api/core/app/collaborator/list', member: 'allow' },
  { method: 'GET', path: '/api/proApi/core/app/collaborator/list', member: 'allow' },
  { method: 'GET', path: '/api/core/app/plugin/getPreviewNode', member: 'allow' },
  // Apps: write-level reads (the editor's data)
  { method: 'GET', path: '/api/core/app/getChatLogs', member: 'refuse' },
  { method: 'POST', path: '/api/core/app/version/list', member: 'refuse' },
  // The edit history shows names, times and authors only: read, as the reference.
  { method: 'POST', path: '/api/core/app/version/listWorkflow', member: 'allow' },
  { method: 'GET', path: '/api/core/app/version/listWorkflowx', member: 'allow' },
  { method: 'GET', path: '/api/core/app/version/latest', member: 'refuse' },
  { method: 'GET', path: '/api/core/app/version/detail', member: 'refuse' },
  // Apps: writes
  { method: 'POST', path: '/api/core/app/update', member: 'refuse', extra: () => ({ name: 'zz-renamed', intro: 'zz' }) },
  { method: 'POST', path: '/api/core/app/copy', member: 'refuse' },
  { method: 'POST', path: '/api/core/app/transitionWorkflow', member: 'refuse', extra: (w, v) => ({ appId: w.apps[v].simpleAppId, createNew: true }) },
  { method: 'GET', path: '/api/core/app/resumeInheritPermission', member: 'refuse' },
  { method: 'POST', path: '/api/core/app/folder/create', member: 'refuse', extra: () => ({ name: 'zz-folder' }) },
  { method: 'POST', path: '/api/core/app/create', member: 'refuse', extra: () => ({ name: 'zz-app', type: 'advanced', modules: probeGraph.nodes, edges: probeGraph.edges }) },
  { method: 'POST', path: '/api/core/app/httpPlugin/create', member: 'refuse', extra: () => ({ name: 'zz-plugin', pluginData: { apiSchemaStr: PETS } }) },
  { method: 'POST', path: '/api/core/app/httpPlugin/update', member: 'refuse', extra: (w, v) => ({ appId: w.apps[v].httpPluginId, name: 'zz-plugin-renamed', pluginData: { apiSchemaStr: PETS } }) },
  { method: 'POST', path: '/api/core/app/version/publish', member: 'refuse', extra: () => ({ ...probeGraph, isPublish: false, versionName: 'zz' }) },
  { method: 'POST', path: '/api/core/app/version/revert', member: 'refuse', extra: () => ({ editNodes: [], editEdges: [] }) },
  { method: 'PUT', path: '/api/core/app/version/update', member: 'refuse', extra: () => ({ versionName: 'zz-version' }) },
  { method: 'POST', path: '/api/core/app/collaborator/update', member: 'refuse', extra: () => ({ permission: 4 }) },
  { method: 'POST', path: '/api/proApi/core/app/collaborator/update', member: 'refuse', extra: () => ({ permission: 4 }) },
  // Runs of caller-supplied workflows: app read
  { method: 'POST', path: '/api/core/chat/chatTest', member: 'allow', extra: () => ({ messages, ...probeGraph }) },
  { method: 'POST', path: '/api/core/workflow/debug', member: 'allow', extra: () => ({ nodes: probeGraph.nodes.map((n) => ({ ...n, isEntry: n.nodeId === 'start' })), edges: probeGraph.edges }) },
  // Chat records of the owner's chat: only its author (or the team owner) may use them
  { method: 'GET', path: '/api/core/chat/init', member: 'refuse' },
  { method: 'POST', path: '/api/core/chat/getHistories', member: 'scoped', other: 'scoped' },
  { method: 'GET', path: '/api/core/chat/getResData', member: 'refuse' },
  { method: 'POST', path: '/api/core/chat/feedback/updateUserFeedback', member: 'refuse', extra: () => ({ userGoodFeedback: 'zz-good' }) },
  { method: 'POST', path: '/api/core/chat/feedback/closeCustom', member: 'refuse', extra: () => ({ index: 0 }) },
  // Annotating another member's chat needs manage on the app.
  { method: 'POST', path: '/api/core/chat/feedback/adminUpdate', member: 'refuse', extra: () => ({ q: 'zz-question', a: 'zz-answer' }) },
  { method: 'PUT', path: '/api/core/chat/updateHistory', member: 'refuse', extra: () => ({ customTitle: 'zz-title', top: true }) },
  { method: 'POST', path: '/api/v1/chat/completions', member: 'refuse', extra: () => ({ messages }) },
  // Input guides: read to list, write to change
  { method: 'GET', path: '/api/core/chat/inputGuide/countTotal', member: 'allow' },
  { method: 'GET', path: '/api/core/chat/inputGuide/list', member: 'allow' },
  { method: 'POST', path: '/api/core/chat/inputGuide/query', member: 'allow', extra: () => ({ searchKey: 'gu' }) },
  { method: 'POST', path: '/api/core/chat/inputGuide/create', member: 'refuse', extra: () => ({ textList: ['zz-guide'] }) },
  { method: 'PUT', path: '/api/core/chat/inputGuide/update', member: 'refuse', extra: () => ({ text: 'zz-guide-renamed' }) },
  // Share links and app keys: manage (they carry channel secrets and keys)
  { method: 'POST', path: '/api/support/outLink/create', member: 'refuse', extra: () => ({ type: 'share', name: 'zz-link' }) },
  { method: 'GET', path: '/api/support/outLink/list', member: 'refuse', extra: () => ({ type: 'share' }) },
  { method: 'POST', path: '/api/support/outLink/update', member: 'refuse', extra: () => ({ name: 'zz-link-renamed' }) },
  { method: 'POST', path: '/api/support/openapi/create', member: 'refuse', extra: () => ({ name: 'zz-key' }) },
  { method: 'GET', path: '/api/support/openapi/list', member: 'refuse' },
  { method: 'PUT', path: '/api/support/openapi/update', member: 'refuse', extra: () => ({ name: 'zz-key-renamed' }) },
  // Datasets: read
  { method: 'GET', path: '/api/core/dataset/detail', member: 'allow' },
  { method: 'POST', path: '/api/core/dataset/list', member: 'allow' },
  { method: 'GET', path: '/api/core/dataset/paths', member: 'allow' },
  { method: 'POST', path: '/api/core/dataset/searchTest', member: 'allow', extra: () => ({ text: 'paragraph' }) },
  { method: 'GET', path: '/api/core/dataset/training/getDatasetTrainingQueue', member: 'allow' },
  { method: 'POST', path: '/api/core/dataset/collection/list', member: 'allow' },
  { method: 'POST', path: '/api/core/dataset/collection/scrollList', member: 'allow' },
  { method: 'GET', path: '/api/core/dataset/collection/detail', member: 'allow' },
  { method: 'GET', path: '/api/core/dataset/collection/paths', member: 'allow' },
  { method: 'GET', path: '/api/core/dataset/collection/read', member: 'allow' },
  { method: 'POST', path: '/api/core/dataset/data/list', member: 'allow' },
  { method: 'POST', path: '/api/core/dataset/data/v2/list', member: 'allow' },
  { method: 'GET', path: '/api/core/dataset/data/detail', member: 'allow' },
  // Datasets: write-level reads and writes
  { method: 'POST', path: '/api/core/dataset/exportAll', member: 'refuse' },
  { method: 'GET', path: '/api/support/user/team/limit/exportDatasetLimit', member: 'refuse' },
  { method: 'POST', path: '/api/support/wallet/usage/createTrainingUsage', member: 'refuse', extra: () => ({ name: 'zz-usage' }) },
  { method: 'POST', path: '/api/core/dataset/file/getPreviewChunks', member: 'refuse', extra: () => ({ type: 'fileLocal' }) },
  { method: 'POST', path: '/api/common/file/previewContent', member: 'refuse', extra: () => ({ type: 'fileLocal' }) },
  // Requeueing the team's training items is a write: the read-only member is refused.
  { method: 'GET', path: '/api/common/system/unlockTask', member: 'refuse', other: 'scoped' },
  { method: 'PUT', path: '/api/core/dataset/update', member: 'refuse', extra: () => ({ name: 'zz-renamed', intro: 'zz' }) },
  { method: 'GET', path: '/api/core/dataset/resumeInheritPermission', member: 'refuse' },
  { method: 'POST', path: '/api/core/dataset/folder/create', member: 'refuse', extra: () => ({ name: 'zz-folder' }) },
  { method: 'POST', path: '/api/core/dataset/create', member: 'refuse', extra: () => ({ name: 'zz-dataset' }) },
  { method: 'POST', path: '/api/core/dataset/training/rebuildEmbedding', member: 'refuse', extra: () => ({ vectorModel: 'local-lexical-v1' }), noControl: 'one vector model is configured, so the owner has nothing to switch to' },
  { method: 'POST', path: '/api/core/dataset/collection/create', member: 'refuse', extra: () => ({ name: 'zz-collection' }) },
  { method: 'POST', path: '/api/core/dataset/collection/create/text', member: 'refuse', extra: () => ({ name: 'zz-text', text: 'zz text body' }) },
  { method: 'POST', path: '/api/core/dataset/collection/create/link', member: 'refuse', extra: () => ({ link: pageUrl }) },
  { method: 'POST', path: '/api/core/dataset/collection/create/fileId', member: 'refuse' },
  { method: 'POST', path: '/api/core/dataset/collection/create/csvTable', member: 'refuse' },
  {
    method: 'POST',
    path: '/api/core/dataset/collection/create/localFile',
    member: 'refuse',
    multipart: (w, v) => ({ fields: { data: JSON.stringify({ datasetId: w.datasets[v].datasetId, parentId: w.datasets[v].collectionFolderId }) }, file: { name: 'zz.txt', content: 'zz local file text' } }),
  },
  { method: 'PUT', path: '/api/core/dataset/collection/update', member: 'refuse', extra: () => ({ name: 'zz-collection-renamed' }) },
  { method: 'POST', path: '/api/core/dataset/collection/sync/link', member: 'refuse', extra: (w, v) => ({ collectionId: w.datasets[v].linkCollectionId }) },
  { method: 'POST', path: '/api/core/dataset/data/insertData', member: 'refuse', extra: () => ({ q: 'zz inserted question', a: 'zz' }) },
  { method: 'POST', path: '/api/core/dataset/data/pushData', member: 'refuse', extra: () => ({ data: [{ q: 'zz pushed question' }] }) },
  { method: 'PUT', path: '/api/core/dataset/data/update', member: 'refuse', extra: () => ({ q: 'zz updated question' }) },
  // Destructive, each after every row that needs its resource
  { method: 'POST', path: '/api/core/chat/inputGuide/delete', member: 'refuse' },
  { method: 'POST', path: '/api/core/chat/inputGuide/deleteAll', member: 'refuse' },
  { method: 'DELETE', path: '/api/core/chat/item/delete', member: 'refuse' },
  { method: 'DELETE', path: '/api/core/chat/delHistory', member: 'refuse' },
  { method: 'DELETE', path: '/api/core/chat/clearHistories', member: 'scoped', other: 'scoped' },
  { method: 'DELETE', path: '/api/support/outLink/delete', member: 'refuse' },
  { method: 'DELETE', path: '/api/support/openapi/delete', member: 'refuse' },
  { method: 'DELETE', path: '/api/core/app/collaborator/delete', member: 'refuse' },
  { method: 'DELETE', path: '/api/proApi/core/app/collaborator/delete', member: 'refuse', noControl: 'the previous row’s control already removed the collaborator' },
  { method: 'DELETE', path: '/api/core/dataset/data/delete', member: 'refuse' },
  { method: 'DELETE', path: '/api/core/dataset/collection/delete', member: 'refuse' },
  { method: 'DELETE', path: '/api/core/dataset/delete', member: 'refuse' },
  { method: 'DELETE', path: '/api/core/app/del', member: 'refuse' },
];

/** Routes whose id-like parameters name no resource of the caller's team. */
const NOT_TEAM_RESOURCES: Record<string, string> = {
  '/api/core/ai/agent/createQuestionGuide': 'shareId is a share-link credential; no resource id',
  '/api/core/chat/item/getSpeech': 'shareId is a share-link credential; no resource id',
  '/api/core/chat/outLink/init': 'the share link itself is the credential (its own realm)',
  '/api/core/chat/team/init': 'team-space realm; refused without TEAM_TOKEN_AUTH_URL',
  '/api/core/app/template/detail': 'templateId names a built-in template',
  '/api/core/app/plugin/getSystemPluginTemplates': 'parentId names a system plugin group',
  '/api/core/app/plugin/path': 'parentId names a system plugin group',
  '/api/plugins/customFeedback/index': "only this service's own workflow runs may call it (self-call proof, else 403)",
  '/api/plugins/customFeedback/v2/index': "only this service's own workflow runs may call it (self-call proof, else 403)",
  '/api/plugins/customFeedback': "only this service's own workflow runs may call it (self-call proof, else 403)",
  '/api/plugins/customFeedback/v2': "only this service's own workflow runs may call it (self-call proof, else 403)",
  '/api/system/img/{id}': 'public by decision (unguessable image ids)',
  '/api/v1/embeddings': 'billId only: a usage record id, not a resource',
};

/** Team-level rows without ids: the read-only member may not create at team level or manage the team. */
const TEAM_ROWS: { method: 'GET' | 'POST'; path: string; body: Record<string, unknown>; member: Expectation }[] = [
  { method: 'POST', path: '/api/support/user/team/update', body: { name: 'zz-team' }, member: 'refuse' },
  { method: 'POST', path: '/api/support/openapi/create', body: { name: 'zz-global-key' }, member: 'refuse' },
  { method: 'POST', path: '/api/core/app/create', body: { name: 'zz-root-app', type: 'advanced', parentId: null, modules: probeGraph.nodes, edges: probeGraph.edges }, member: 'refuse' },
  { method: 'POST', path: '/api/core/app/folder/create', body: { name: 'zz-root-folder', parentId: null }, member: 'refuse' },
  { method: 'POST', path: '/api/core/app/httpPlugin/create', body: { name: 'zz-root-plugin', parentId: null, pluginData: { apiSchemaStr: PETS } }, member: 'refuse' },
  { method: 'POST', path: '/api/core/dataset/create', body: { name: 'zz-root-dataset', parentId: null }, member: 'refuse' },
  { method: 'POST', path: '/api/core/dataset/folder/create', body: { name: 'zz-root-folder', parentId: null }, member: 'refuse' },
  // Team-wide reads: allowed, but must not show private items or write-level data.
  { method: 'POST', path: '/api/core/app/list', body: { parentId: null }, member: 'allow' },
  { method: 'POST', path: '/api/core/app/list', body: { searchKey: 'Z' }, member: 'allow' },
  { method: 'POST', path: '/api/core/dataset/list', body: { parentId: null }, member: 'allow' },
  { method: 'POST', path: '/api/core/dataset/list', body: { searchKey: 'Z' }, member: 'allow' },
  { method: 'GET', path: '/api/core/dataset/allDataset', body: {}, member: 'allow' },
  { method: 'GET', path: '/api/support/openapi/list', body: {}, member: 'allow' },
];

const operations = loadOperations();
const operation = (method: string, path: string): Operation | undefined => operations.find((op) => op.method === method && op.path === path);
const isIdField = (name: string) => ID_NAME.test(name);

let w: World;
/** Snapshots for the loops below: each reads again only what the app wrote since the last. */
let snapshots: SnapshotTracker;
let site: LocalSite;
let pageUrl = '';

beforeAll(async () => {
  site = await startLocalSite((_req, res) => {
    res.setHeader('content-type', 'text/html');
    res.end('<html><head><title>zz page</title></head><body><main><p>A page to import as a link collection.</p></main></body></html>');
  });
  pageUrl = `${site.url}/page`;
  w = await buildWorld({ env: { SSRF_ALLOW_PRIVATE: 'true' }, linkUrl: pageUrl });
  snapshots = snapshotTracker(w.t.app);
}, 120_000);

afterAll(async () => {
  snapshots?.stop();
  await w?.close();
  await site?.close();
});

/** The request of a row for a variant: world ids of the route's id parameters, required fields, extras. */
function requestOf(row: Row, v: Variant, token: string): InjectOptions {
  const headers = { token };
  if (row.multipart) {
    const { fields, file } = row.multipart(w, v);
    const body = multipart(fields, { ...file, type: 'text/plain' });
    return { method: row.method, url: row.path, headers: { ...headers, ...body.headers }, payload: body.payload };
  }
  const op = operation(row.method, row.path)!;
  const values: Record<string, unknown> = {};
  for (const field of op.fields) {
    const id = isIdField(field.name) ? worldId(w, row.path, field.name, v) : UNMAPPED;
    if (id !== UNMAPPED && id !== undefined) values[field.name] = id;
    else if (field.required && !isIdField(field.name)) values[field.name] = sample(field.schema, field.name);
  }
  Object.assign(values, row.extra?.(w, v));
  if (row.method === 'GET' || row.method === 'DELETE') return { method: row.method, url: `${row.path}${queryString(values)}`, headers };
  return { method: row.method, url: row.path, headers, payload: values };
}

function statusMeets(expected: Expectation, status: number): boolean {
  if (expected === 'refuse') return status === 403 || status === 404;
  if (expected === 'allow') return status >= 200 && status < 300;
  return status === 200 || status === 403 || status === 404;
}

/** Markers a caller must never see: all of team A for another team, private and write-level data for the member. */
const forbiddenMarkers = (caller: 'other' | 'member') => (caller === 'other' ? [MARK.anyTeamA] : [MARK.private, MARK.write]);

interface Outcome {
  caller: 'other' | 'member';
  expected: Expectation;
  status: number;
  body: string;
}

async function send(person: Person, options: InjectOptions): Promise<{ status: number; body: string }> {
  const response = await w.t.app.inject({ ...options, headers: { ...(options.headers as Record<string, string>), token: person.token } });
  return { status: response.statusCode, body: response.body };
}

function judge(label: string, outcome: Outcome): string[] {
  const problems: string[] = [];
  if (!statusMeets(outcome.expected, outcome.status)) problems.push(`${label}: ${outcome.caller} expected ${outcome.expected}, got ${outcome.status} ${outcome.body.slice(0, 200)}`);
  const leaked = forbiddenMarkers(outcome.caller).filter((marker) => outcome.body.includes(marker));
  if (leaked.length > 0) {
    const at = outcome.body.indexOf(leaked[0]!);
    problems.push(`${label}: ${outcome.caller} (${outcome.status}) sees ${leaked.join(', ')} data: …${outcome.body.slice(Math.max(0, at - 80), at + 80)}…`);
  }
  return problems;
}

describe('permission matrix', () => {
  it('covers every id-taking route of openapi.json, and every row names a served route with mapped ids', () => {
    const idTaking = new Set(operations.filter((op) => op.fields.some((f) => isIdField(f.name))).map((op) => op.path));
    const covered = new Set([...ROWS.map((r) => r.path), ...Object.keys(NOT_TEAM_RESOURCES)]);
    expect([...idTaking].filter((path) => !covered.has(path)), 'id-taking routes missing from the table').toEqual([]);
    expect(ROWS.filter((r) => !operation(r.method, r.path)).map((r) => `${r.method} ${r.path}`), 'rows naming no documented operation').toEqual([]);
    const unmapped = ROWS.flatMap((r) =>
      operation(r.method, r.path)!
        .fields.filter((f) => isIdField(f.name) && worldId(w, r.path, f.name, 'shared') === UNMAPPED)
        .map((f) => `${r.path} ${f.name}`),
    );
    expect(unmapped, 'id parameters nobody reviewed').toEqual([]);
  });

  it('the snapshot sees a change (so "nothing changed" below means something), and the tracked one the same', async () => {
    const trackedBefore = await snapshots.take();
    const before = await snapshot(w.t.app);
    const response = await send(w.ownerA, { method: 'POST', url: '/api/core/dataset/collection/update', payload: { id: w.datasets.shared.collectionId, tags: ['zz-tag'] } });
    expect(response.status, response.body).toBe(200);
    const after = await snapshot(w.t.app);
    expect(diffSnapshots(before, after).join('\n')).toMatch(/^dataset_collections: changed/);
    const tracked = await snapshots.take();
    expect(diffSnapshots(trackedBefore, tracked).join('\n')).toMatch(/^dataset_collections: changed/);
    expect(diffSnapshots(after, tracked)).toEqual([]);
  });

  it('the read-only member cannot create at team level or manage the team, and team-wide reads show nothing private', async () => {
    const offenders: string[] = [];
    for (const row of TEAM_ROWS) {
      const label = `${row.method} ${row.path} ${JSON.stringify(row.body)}`;
      const options: InjectOptions =
        row.method === 'GET' ? { method: 'GET', url: `${row.path}${queryString(row.body)}` } : { method: row.method, url: row.path, payload: row.body };
      const before = await snapshots.take();
      offenders.push(...judge(label, { caller: 'member', expected: row.member, ...(await send(w.member, options)) }));
      const changes = diffSnapshots(before, await snapshots.take());
      if (row.member === 'refuse' && changes.length > 0) offenders.push(`${label}: a refused request changed the database: ${changes.slice(0, 3).join(' | ')}`);
    }
    expect(offenders, `${offenders.length} problems:\n${offenders.join('\n')}`).toEqual([]);
  });

  it('another team’s owner and the read-only member are refused, change nothing, and see nothing private', async () => {
    const offenders: string[] = [];
    for (const row of ROWS) {
      for (const v of VARIANTS) {
        const label = `${row.method} ${row.path} (${v})`;
        const memberExpects: Expectation = row.member === 'scoped' ? 'scoped' : v === 'private' ? 'refuse' : row.member;
        const before = await snapshots.take();
        const other: Outcome = { caller: 'other', expected: row.other ?? 'refuse', ...(await send(w.ownerB, requestOf(row, v, w.ownerB.token))) };
        offenders.push(...judge(label, other));
        const memberRefused = memberExpects !== 'allow';
        if (memberRefused) {
          const member: Outcome = { caller: 'member', expected: memberExpects, ...(await send(w.member, requestOf(row, v, w.member.token))) };
          offenders.push(...judge(label, member));
        }
        const changes = diffSnapshots(before, await snapshots.take());
        if (changes.length > 0) offenders.push(`${label}: a refused request changed the database: ${changes.slice(0, 3).join(' | ')}`);
        if (!memberRefused) {
          offenders.push(...judge(label, { caller: 'member', expected: 'allow', ...(await send(w.member, requestOf(row, v, w.member.token))) }));
        }
        if (!row.noControl) {
          const control = await send(w.ownerA, requestOf(row, v, w.ownerA.token));
          if (control.status !== 200) offenders.push(`${label}: control: the owner's own request failed (${control.status} ${control.body.slice(0, 200)}), so the refusals above prove nothing`);
        }
      }
    }
    expect(offenders, `${offenders.length} problems:\n${offenders.join('\n')}`).toEqual([]);
  }, 180_000);

});
