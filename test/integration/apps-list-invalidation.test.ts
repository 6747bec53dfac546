import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildReplica, type TestApp } from '../helpers/app.js';
import { commandsDuring, type RecordedCommand } from '../helpers/command-counter.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { call, createApp, createFolder, ok } from './apps-helpers.js';
import { simpleChatGraph, startChatApp } from './chat-helpers.js';

/**
 * Every write that changes `core/app/list` is seen by the next list at once, on the process
 * that wrote (a) and on a second process on the same database (b), both holding the team's
 * list in their read model from a list made just before the write.
 */
let a: TestApp;
let b: TestApp;
let fake: FakeOpenAi;
const tok: Record<string, string> = {};
const tmb: Record<string, string> = {};

interface Listed {
  _id: string;
  name: string;
  intro: string;
  avatar: string;
  type: string;
  parentId: string | null;
  inheritPermission: boolean;
  defaultPermission: number;
  updateTime: string;
  permission: { value: number };
}

const list = (p: TestApp, who: string, body: Record<string, unknown> = {}): Promise<Listed[]> => ok(p, tok[who] as string, 'POST', '/core/app/list', body);

/** Lists on both processes so each holds the team's current list (what a missed bump would serve). */
async function warm(who: string, body: Record<string, unknown> = {}) {
  await list(a, who, body);
  await list(b, who, body);
}

/** The list right after the write, on both processes (which must agree). */
async function seen(who: string, body: Record<string, unknown> = {}): Promise<Listed[]> {
  const onA = await list(a, who, body);
  expect(await list(b, who, body)).toEqual(onA);
  return onA;
}

const names = (items: Listed[]) => items.map((x) => x.name);
const byName = (items: Listed[], name: string) => items.find((x) => x.name === name);
const update = (who: string, body: Record<string, unknown>) => ok(a, tok[who] as string, 'POST', '/core/app/update', body);

beforeAll(async () => {
  ({ t: a, fake } = await startChatApp());
  b = await buildReplica(a);
  const boss = await createUser(a, { username: 'inv-boss', password: 'password-1' });
  tmb.boss = boss.tmbId;
  const rita = await createUser(a, { username: 'inv-rita', password: 'password-1', teamId: boss.teamId, role: 'member', permission: 4 });
  tmb.rita = rita.tmbId;
  for (const name of ['boss', 'rita']) tok[name] = await login(a, `inv-${name}`, 'password-1');
});
afterAll(async () => {
  await b?.close();
  await a?.close();
  await fake?.close();
});

describe('app list read model: every write is seen at once on both processes', () => {
  it('create, folder create and copy', async () => {
    await warm('boss', { parentId: null });
    const id = await createApp(a, tok.boss as string, { name: 'fresh app' });
    expect(byName(await seen('boss', { parentId: null }), 'fresh app')?._id).toBe(id);
    await ok(b, tok.boss as string, 'POST', '/core/app/folder/create', { name: 'fresh folder', parentId: null });
    expect(byName(await seen('boss', { parentId: null }), 'fresh folder')?.type).toBe('folder');
    await ok(a, tok.boss as string, 'POST', '/core/app/copy', { appId: id });
    expect(names(await seen('boss', { parentId: null }))).toContain('fresh app Copy');
  });

  it('update of name, avatar and intro', async () => {
    const id = await createApp(a, tok.boss as string, { name: 'to rename' });
    await warm('boss');
    await update('boss', { appId: id, name: 'renamed', avatar: '/imgs/new.svg', intro: 'new intro' });
    expect((await seen('boss')).find((x) => x._id === id)).toMatchObject({ name: 'renamed', avatar: '/imgs/new.svg', intro: 'new intro' });
  });

  it('a move out of the root into a folder and back', async () => {
    const folder = await createFolder(a, tok.boss as string, 'move target');
    const id = await createApp(a, tok.boss as string, { name: 'mover' });
    await warm('boss', { parentId: null });
    await warm('boss', { parentId: folder });
    await update('boss', { appId: id, parentId: folder });
    expect(names(await seen('boss', { parentId: null }))).not.toContain('mover');
    expect(names(await seen('boss', { parentId: folder }))).toEqual(['mover']);
    await update('boss', { appId: id, parentId: null });
    expect(names(await seen('boss', { parentId: folder }))).toEqual([]);
    expect(names(await seen('boss', { parentId: null }))).toContain('mover');
  });

  it('a default permission change shows, then hides, an app to a read-only member', async () => {
    const id = await createApp(a, tok.boss as string, { name: 'private app' });
    await warm('rita');
    await update('boss', { appId: id, defaultPermission: 4 });
    expect(byName(await seen('rita'), 'private app')).toMatchObject({ defaultPermission: 4, permission: { value: 4 } });
    await update('boss', { appId: id, defaultPermission: 0 });
    expect(names(await seen('rita'))).not.toContain('private app');
  });

  it('collaborator update and delete', async () => {
    const id = await createApp(a, tok.boss as string, { name: 'shared app' });
    await warm('rita');
    await ok(a, tok.boss as string, 'POST', '/core/app/collaborator/update', { appId: id, tmbIds: [tmb.rita], permission: 6 });
    expect(byName(await seen('rita'), 'shared app')?.permission.value).toBe(6);
    await ok(a, tok.boss as string, 'GET', '/proApi/core/app/collaborator/delete', { appId: id, tmbId: tmb.rita });
    expect(names(await seen('rita'))).not.toContain('shared app');
  });

  it('inheritance broken by a default change, then resumed', async () => {
    const folder = await createFolder(a, tok.boss as string, 'open folder');
    await update('boss', { appId: folder, defaultPermission: 4 });
    const id = await createApp(a, tok.boss as string, { name: 'inheriting', parentId: folder });
    expect(byName(await seen('rita', { parentId: folder }), 'inheriting')).toMatchObject({ inheritPermission: true, defaultPermission: 4 });
    await update('boss', { appId: id, defaultPermission: 0 });
    expect(names(await seen('rita', { parentId: folder }))).toEqual([]);
    expect(byName(await seen('boss', { parentId: folder }), 'inheriting')?.inheritPermission).toBe(false);
    await ok(a, tok.boss as string, 'POST', '/core/app/resumeInheritPermission', { appId: id });
    expect(byName(await seen('rita', { parentId: folder }), 'inheriting')).toMatchObject({ inheritPermission: true, permission: { value: 4 } });
  });

  it('a delete removes the whole subtree', async () => {
    const top = await createFolder(a, tok.boss as string, 'doomed');
    const sub = await createFolder(a, tok.boss as string, 'doomed sub', top);
    const inTop = await createApp(a, tok.boss as string, { name: 'doomed app', parentId: top });
    const inSub = await createApp(a, tok.boss as string, { name: 'doomed deep app', parentId: sub });
    await warm('boss');
    await warm('boss', { parentId: top });
    await ok(a, tok.boss as string, 'POST', '/core/app/del', { appId: top });
    const ids = (await seen('boss')).map((x) => x._id);
    for (const gone of [top, sub, inTop, inSub]) expect(ids).not.toContain(gone);
    for (const p of [a, b]) expect((await call(p, tok.boss as string, 'POST', '/core/app/list', { parentId: top })).status).toBe(404);
  });

  it('a simple app turned into a workflow, in place and as a copy', async () => {
    const id = await createApp(a, tok.boss as string, { name: 'simple one' });
    await warm('boss');
    await ok(a, tok.boss as string, 'POST', '/core/app/transitionWorkflow', { appId: id, createNew: false });
    expect((await seen('boss')).find((x) => x._id === id)?.type).toBe('advanced');
    const other = await createApp(a, tok.boss as string, { name: 'simple two' });
    await warm('boss');
    await ok(a, tok.boss as string, 'POST', '/core/app/transitionWorkflow', { appId: other, createNew: true });
    expect(byName(await seen('boss'), 'simple two Copy')?.type).toBe('advanced');
  });

  it('a version publish and a revert move the app to the top', async () => {
    const older = await createApp(a, tok.boss as string, { name: 'older', type: 'advanced', modules: simpleChatGraph.nodes, edges: simpleChatGraph.edges });
    await createApp(a, tok.boss as string, { name: 'newer' });
    await warm('boss');
    await ok(a, tok.boss as string, 'POST', `/core/app/version/publish?appId=${older}`, { ...simpleChatGraph, isPublish: true, versionName: 'v1' });
    expect(names(await seen('boss'))[0]).toBe('older');
    await createApp(a, tok.boss as string, { name: 'newest' });
    const versions = await ok(a, tok.boss as string, 'POST', '/core/app/version/list', { appId: older, current: 1, pageSize: 10 });
    await warm('boss');
    await ok(a, tok.boss as string, 'POST', '/core/app/version/revert', { appId: older, versionId: versions.list[0]._id });
    expect(names(await seen('boss'))[0]).toBe('older');
  });

  it('an HTTP plugin: its generated children appear, are reconciled and renamed', async () => {
    const schema = (ops: string[]) => JSON.stringify({ openapi: '3.0.0', servers: [{ url: 'https://api.example.com' }], paths: Object.fromEntries(ops.map((op) => [`/${op}`, { get: { operationId: op } }])) });
    await warm('boss', { type: 'httpPlugin' });
    await ok(a, tok.boss as string, 'POST', '/core/app/httpPlugin/create', { name: 'Tools', pluginData: { apiSchemaStr: schema(['one', 'two']) } });
    const id = byName(await seen('boss', { type: 'httpPlugin' }), 'Tools')?._id as string;
    expect(names(await seen('boss', { parentId: id })).sort()).toEqual(['one', 'two']);
    await ok(a, tok.boss as string, 'POST', '/core/app/httpPlugin/update', { appId: id, name: 'Tools v2', pluginData: { apiSchemaStr: schema(['two', 'three']) } });
    expect(names(await seen('boss', { parentId: id })).sort()).toEqual(['three', 'two']);
    expect(names(await seen('boss', { type: 'httpPlugin' }))).toContain('Tools v2');
  });

  it('a chat by the owner moves the app to the top (updateTime)', async () => {
    const chatted = await createApp(a, tok.boss as string, { name: 'chatted', type: 'advanced', modules: simpleChatGraph.nodes, edges: simpleChatGraph.edges });
    await createApp(a, tok.boss as string, { name: 'after it' });
    await warm('boss', { getRecentlyChat: true });
    expect(names(await seen('boss', { getRecentlyChat: true }))[0]).toBe('after it');
    const before = byName(await list(a, 'boss'), 'chatted')?.updateTime;
    const response = await a.app.inject({
      method: 'POST',
      url: '/api/v1/chat/completions',
      headers: authHeaders(tok.boss as string),
      payload: { appId: chatted, chatId: 'touch-1', messages: [{ role: 'user', content: 'hello' }] },
    });
    expect(response.statusCode, response.body).toBe(200);
    const after = await seen('boss', { getRecentlyChat: true });
    expect(names(after)[0]).toBe('chatted');
    expect(byName(after, 'chatted')?.updateTime).not.toBe(before);
  });

  it('a draft save of nodes only leaves the stamp alone (no listed field changes)', async () => {
    const id = await createApp(a, tok.boss as string, { name: 'draft only' });
    const commands = await commandsDuring(a.app, () => update('boss', { appId: id, nodes: simpleChatGraph.nodes, edges: simpleChatGraph.edges }));
    expect(commands.filter((c) => c.collection === 'apps' && c.name === 'update')).toHaveLength(1);
    // The list's stamp is not bumped by a draft save (authorising it may read the stamp).
    const listStampBump = (c: RecordedCommand) => c.collection === 'version_stamps' && c.key?.startsWith('apps:') === true && c.name === 'update';
    expect(commands.filter(listStampBump)).toEqual([]);
    const renamed = await commandsDuring(a.app, () => update('boss', { appId: id, name: 'draft renamed' }));
    expect(renamed.filter(listStampBump).length).toBeGreaterThan(0);
  });
});
