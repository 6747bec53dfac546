import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';
import { call, createApp, createFolder, ok, simpleNodes } from './apps-helpers.js';

let t: TestApp;
let owner: string;
let other: string;

beforeAll(async () => {
  t = await buildTestApp();
  await createUser(t, { username: 'crud-owner', password: 'password-1' });
  await createUser(t, { username: 'crud-other', password: 'password-2' });
  owner = await login(t, 'crud-owner', 'password-1');
  other = await login(t, 'crud-other', 'password-2');
});
afterAll(() => t.close());

describe('create, list, detail', () => {
  it('creates every type, with an initial version for non-folders', async () => {
    const ids: Record<string, string> = {};
    for (const type of ['simple', 'advanced', 'plugin', 'folder', 'httpPlugin']) {
      ids[type] = await createApp(t, owner, { name: `app-${type}`, type });
      expect(ids[type]).toMatch(/^[0-9a-f]{24}$/);
    }
    const versions = await ok(t, owner, 'POST', '/core/app/version/list', { appId: ids.simple, current: 1, pageSize: 10 });
    expect(versions.total).toBe(1);
    expect(versions.list[0].nodes).toEqual(simpleNodes);
    const list = await ok(t, owner, 'POST', '/core/app/list', {});
    expect(list.map((a: { name: string }) => a.name).sort()).toEqual(['app-advanced', 'app-folder', 'app-httpPlugin', 'app-plugin', 'app-simple']);
    expect(list[0].permission).toEqual({ value: 4294967295, isOwner: true, hasManagePer: true, hasWritePer: true, hasReadPer: true });
  });

  it('takes ids sent in capitals as the same ids (lists, details, and a folder moved into itself is still refused)', async () => {
    const folder = await createFolder(t, owner, 'Capitals');
    const inside = await createApp(t, owner, { name: 'in capitals', parentId: folder });
    const listed = await ok(t, owner, 'POST', '/core/app/list', { parentId: folder.toUpperCase() });
    expect(listed.map((a: { _id: string }) => a._id)).toEqual([inside]);
    const detail = await ok(t, owner, 'GET', `/core/app/detail?appId=${inside.toUpperCase()}`);
    expect(detail._id).toBe(inside);
    const selfMove = await call(t, owner, 'POST', '/core/app/update', { appId: folder, parentId: folder.toUpperCase() });
    expect(selfMove.status).toBe(400);
    expect((await ok(t, owner, 'GET', `/core/app/detail?appId=${folder}`)).parentId).toBeNull();
  });

  it('lists by parent, type (string or array) and escaped search, newest first', async () => {
    const folder = await createFolder(t, owner, 'Projects');
    const inside = await createApp(t, owner, { name: 'inner (a+b)*', parentId: folder });
    await createApp(t, owner, { name: 'innerab', parentId: folder, type: 'advanced' });
    const inFolder = await ok(t, owner, 'POST', '/core/app/list', { parentId: folder });
    expect(inFolder.map((a: { name: string }) => a.name)).toEqual(['innerab', 'inner (a+b)*']);
    const root = await ok(t, owner, 'POST', '/core/app/list', { parentId: null });
    expect(root.some((a: { _id: string }) => a._id === inside)).toBe(false);
    const whole = await ok(t, owner, 'POST', '/core/app/list', {});
    expect(whole.some((a: { _id: string }) => a._id === inside)).toBe(true);
    const byType = await ok(t, owner, 'POST', '/core/app/list', { type: 'advanced' });
    expect(byType.every((a: { type: string }) => a.type === 'advanced')).toBe(true);
    const byTypes = await ok(t, owner, 'POST', '/core/app/list', { type: ['folder', 'plugin'] });
    expect(new Set(byTypes.map((a: { type: string }) => a.type))).toEqual(new Set(['folder', 'plugin']));
    const search = await ok(t, owner, 'POST', '/core/app/list', { searchKey: '(a+b)*' });
    expect(search.map((a: { name: string }) => a.name)).toEqual(['inner (a+b)*']);
    const recent = await ok(t, owner, 'POST', '/core/app/list', { getRecentlyChat: true });
    expect(recent.every((a: { type: string }) => ['simple', 'advanced', 'plugin'].includes(a.type))).toBe(true);
    const path = await ok(t, owner, 'GET', '/core/app/folder/path', { parentId: folder });
    expect(path).toEqual([{ parentId: folder, parentName: 'Projects' }]);
  });

  it('detail returns the app with permission; update changes fields only', async () => {
    const id = await createApp(t, owner, { name: 'detail-me', avatar: '/a.png', chatConfig: { welcomeText: 'hi' } });
    const detail = await ok(t, owner, 'GET', '/core/app/detail', { appId: id });
    expect(detail).toMatchObject({ _id: id, name: 'detail-me', type: 'simple', avatar: '/a.png', modules: simpleNodes, chatConfig: { welcomeText: 'hi' }, inheritPermission: true, defaultPermission: 0 });
    await ok(t, owner, 'PUT', `/core/app/update?appId=${id}`, { name: 'renamed', intro: 'x', nodes: [{ nodeId: 'n1' }], teamTags: ['a'] });
    const after = await ok(t, owner, 'GET', '/core/app/detail', { appId: id });
    expect(after).toMatchObject({ name: 'renamed', intro: 'x', modules: [{ nodeId: 'n1' }], teamTags: ['a'] });
  });

  it('copy and transitionWorkflow', async () => {
    const id = await createApp(t, owner, { name: 'source' });
    const copy = await ok(t, owner, 'POST', '/core/app/copy', { appId: id });
    const copied = await ok(t, owner, 'GET', '/core/app/detail', { appId: copy.appId });
    expect(copied).toMatchObject({ name: 'source Copy', type: 'simple', modules: simpleNodes });
    const created = await ok(t, owner, 'POST', '/core/app/transitionWorkflow', { appId: id, createNew: true });
    expect((await ok(t, owner, 'GET', '/core/app/detail', { appId: created.id })).type).toBe('advanced');
    expect(await ok(t, owner, 'POST', '/core/app/transitionWorkflow', { appId: id })).toEqual({});
    expect((await ok(t, owner, 'GET', '/core/app/detail', { appId: id })).type).toBe('advanced');
    const again = await call(t, owner, 'POST', '/core/app/transitionWorkflow', { appId: id });
    expect(again.status).toBe(400);
    expect(again.body.statusText).toBe('invalidAppType');
  });
});

describe('bad input writes nothing', () => {
  const cases: [string, string, string, Record<string, unknown>, number, string][] = [
    ['missing name', 'POST', '/core/app/create', { type: 'simple', modules: [] }, 400, 'missingParams'],
    ['unknown type', 'POST', '/core/app/create', { name: 'x', type: 'robot', modules: [] }, 400, 'missingParams'],
    ['name too long', 'POST', '/core/app/create', { name: 'n'.repeat(201), type: 'simple', modules: [] }, 400, 'missingParams'],
    ['nodes not an array', 'POST', '/core/app/create', { name: 'x', type: 'simple', modules: { a: 1 } }, 400, 'missingParams'],
    ['malformed parent', 'POST', '/core/app/create', { name: 'x', type: 'simple', modules: [], parentId: 'abc' }, 400, 'missingParams'],
    ['missing parent', 'POST', '/core/app/create', { name: 'x', type: 'simple', modules: [], parentId: '0123456789abcdef01234567' }, 404, 'appUnExist'],
    ['missing folder parent', 'POST', '/core/app/folder/create', { name: 'x', parentId: '0123456789abcdef01234567' }, 404, 'appUnExist'],
    ['malformed appId', 'GET', '/core/app/detail', { appId: 'zz' }, 400, 'missingParams'],
    ['missing appId', 'GET', '/core/app/detail', {}, 400, 'missingParams'],
    ['unknown app', 'GET', '/core/app/detail', { appId: '0123456789abcdef01234567' }, 404, 'appUnExist'],
    ['update nodes not array', 'PUT', '/core/app/update?appId=0123456789abcdef01234567', { nodes: 'x' }, 400, 'missingParams'],
  ];
  it.each(cases)('%s', async (_label, method, url, payload, status, statusText) => {
    const before = (await ok(t, owner, 'POST', '/core/app/list', {})).length;
    const r = await call(t, owner, method, url, payload);
    expect(r.status, JSON.stringify(r.body)).toBe(status);
    expect(r.body.statusText).toBe(statusText);
    expect((await ok(t, owner, 'POST', '/core/app/list', {})).length).toBe(before);
  });

  it('a parent in another team is refused', async () => {
    const foreign = await createFolder(t, other, 'theirs');
    const r = await call(t, owner, 'POST', '/core/app/create', { name: 'x', type: 'simple', modules: [], parentId: foreign });
    expect(r.status).toBe(403);
    expect(r.body.statusText).toBe('unAuthApp');
    expect((await ok(t, other, 'POST', '/core/app/list', { parentId: foreign })).length).toBe(0);
  });

  it('nodes whose inputs are not objects are a 400 naming the field, and the update moves and shares nothing', async () => {
    const folder = await createFolder(t, owner, 'move target');
    const appId = await createApp(t, owner, { name: 'kept in place' });
    const before = await ok(t, owner, 'GET', `/core/app/detail?appId=${appId}`);
    for (const nodes of [[{ flowNodeType: 'chatNode', inputs: [null] }], [{ flowNodeType: 'datasetSearchNode', inputs: [1, 'limit'] }], [{ flowNodeType: 'chatNode', outputs: [null] }]]) {
      const update = await call(t, owner, 'POST', '/core/app/update', { appId, parentId: folder, defaultPermission: 4, nodes, edges: [] });
      expect(update.status, JSON.stringify(update.body)).toBe(400);
      expect(update.body.message).toMatch(/^Invalid field 'nodes/);
      const publish = await call(t, owner, 'POST', '/core/app/version/publish', { appId, nodes, edges: [], chatConfig: {}, isPublish: true });
      expect(publish.status, JSON.stringify(publish.body)).toBe(400);
    }
    const after = await ok(t, owner, 'GET', `/core/app/detail?appId=${appId}`);
    expect(after).toEqual(before);
    expect((await ok(t, owner, 'POST', '/core/app/list', { parentId: folder })).length).toBe(0);
    // A node sent without inputs or outputs has none: the editor's runs answer, never a 500.
    for (const [url, payload] of [
      ['/core/chat/chatTest', { appId, nodes: [{}], edges: [], messages: [{ role: 'user', content: 'hi' }] }],
      ['/core/workflow/debug', { appId, nodes: [{}], edges: [{}] }],
    ] as const) {
      const run = await call(t, owner, 'POST', url, payload);
      expect(run.status, url).toBeLessThan(500);
      expect(JSON.stringify(run.body), url).not.toContain('"code":500');
    }
    // Saved so (stored as sent), the graph runs: its nodes have no inputs or outputs.
    const bare = [
      { nodeId: 'start', flowNodeType: 'workflowStart', name: 'Start' },
      { nodeId: 'say', flowNodeType: 'answerNode', name: 'Say' },
    ];
    const edges = [{ source: 'start', sourceHandle: 'start-source-right', target: 'say', targetHandle: 'say-target-left' }];
    await ok(t, owner, 'POST', '/core/app/version/publish', { appId, nodes: bare, edges, chatConfig: {}, isPublish: true });
    expect((await ok(t, owner, 'POST', '/core/app/version/list', { appId, current: 1, pageSize: 1 })).list[0].nodes).toEqual(bare);
    const turn = await call(t, owner, 'POST', '/v1/chat/completions', { appId, messages: [{ role: 'user', content: 'hi' }] });
    expect(turn.status, JSON.stringify(turn.body)).toBe(200);
    expect((await call(t, owner, 'GET', '/core/chat/init', { appId })).status).toBe(200);
  });

  it('an invalid default permission, or one changed in the same request as a move, is a 400 before anything moves', async () => {
    const folder = await createFolder(t, owner, 'second target');
    const appId = await createApp(t, owner, { name: 'stays put' });
    const before = await ok(t, owner, 'GET', `/core/app/detail?appId=${appId}`);
    for (const payload of [{ parentId: folder, defaultPermission: 5 }, { parentId: folder, defaultPermission: 4, name: 'renamed' }]) {
      const update = await call(t, owner, 'POST', '/core/app/update', { appId, ...payload });
      expect(update.status, JSON.stringify(update.body)).toBe(400);
      expect(update.body.message).toMatch(/^Invalid field 'defaultPermission'/);
    }
    expect(await ok(t, owner, 'GET', `/core/app/detail?appId=${appId}`)).toEqual(before);
    // A move that sends the unchanged default permission back (as a client echoing the app) goes through.
    await ok(t, owner, 'POST', '/core/app/update', { appId, parentId: folder, defaultPermission: before.defaultPermission });
    expect((await ok(t, owner, 'POST', '/core/app/list', { parentId: folder })).map((a: { _id: string }) => a._id)).toEqual([appId]);
  });

  it('a parent that is not a folder is refused', async () => {
    const plain = await createApp(t, owner, { name: 'plain parent' });
    const r = await call(t, owner, 'POST', '/core/app/folder/create', { name: 'child', parentId: plain });
    expect(r.status).toBe(400);
  });

  it('requires a session', async () => {
    const r = await call(t, null, 'POST', '/core/app/list', {});
    expect(r.status).toBe(401);
  });
});
