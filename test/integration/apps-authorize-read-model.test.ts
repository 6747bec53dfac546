/**
 * App authorisation is judged on the team's app list read model and the app is read from the
 * per-process document cache: a warm request reads no app and no permission row. Every write
 * that changes who may do what on an app is seen by the very next request on a second process
 * (b) that judged the same app just before the write through the first (a).
 */
import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAppPermissionService } from '../../src/platform/apps/app-permissions.js';
import { isCredentialEpochKey } from '../../src/platform/identity/credential-epoch.js';
import { buildReplica, buildTestApp, type TestApp } from '../helpers/app.js';
import { commandsDuring, type RecordedCommand } from '../helpers/command-counter.js';
import { createUser, login } from '../helpers/platform.js';
import { call, createApp, createFolder, ok } from './apps-helpers.js';
import { simpleChatGraph } from './chat-helpers.js';

let a: TestApp;
let b: TestApp;
const tok: Record<string, string> = {};
let ritaTmbId: string;
let bossIds: { teamId: string; tmbId: string };

/** Version stamp reads (at most one per key and lease) are not the route's own work. */
const isStampRead = (command: RecordedCommand) => command.name === 'find' && command.collection === 'version_stamps';
const routeWork = (commands: RecordedCommand[]) => commands.filter((command) => !isStampRead(command)).map((command) => `${command.name} ${command.collection}`);

const detail = (p: TestApp, who: string, appId: string) => call(p, tok[who] as string, 'GET', '/core/app/detail', { appId });
const status = async (p: TestApp, who: string, appId: string) => (await detail(p, who, appId)).status;
const rename = (p: TestApp, who: string, appId: string, name: string) => call(p, tok[who] as string, 'POST', '/core/app/update', { appId, name });
const update = (who: string, body: Record<string, unknown>) => ok(a, tok[who] as string, 'POST', '/core/app/update', body);

beforeAll(async () => {
  a = await buildTestApp();
  b = await buildReplica(a);
  const boss = await createUser(a, { username: 'authz-boss', password: 'password-1' });
  bossIds = { teamId: boss.teamId, tmbId: boss.tmbId };
  const rita = await createUser(a, { username: 'authz-rita', password: 'password-1', teamId: boss.teamId, role: 'member', permission: 4 });
  ritaTmbId = rita.tmbId;
  await createUser(a, { username: 'authz-eve', password: 'password-1' });
  for (const name of ['boss', 'rita', 'eve']) tok[name] = await login(a, `authz-${name}`, 'password-1');
});
afterAll(async () => {
  await b?.close();
  await a?.close();
});

describe('database commands of app-authorised reads', () => {
  it('a warm app detail reads no app and no permission row', async () => {
    const id = await createApp(a, tok.boss as string, { name: 'counted', type: 'advanced', modules: simpleChatGraph.nodes, edges: simpleChatGraph.edges });
    await detail(a, 'boss', id);
    const commands = await commandsDuring(a.app, () => detail(a, 'boss', id));
    expect(routeWork(commands)).toEqual([]);
    // Past the stamps' lease the route reads stamps only (the credential epoch, the team's two app stamps).
    await new Promise((resolve) => setTimeout(resolve, 120));
    const leased = await commandsDuring(a.app, () => detail(a, 'boss', id));
    expect(routeWork(leased)).toEqual([]);
    expect(leased.filter(isStampRead).every((command) => isCredentialEpochKey(command.key) || /^(apps|app-workflows):/.test(command.key ?? ''))).toBe(true);
  });
});

describe('requests that only read, whatever permission they need, are judged in memory too', () => {
  /** Routes that change nothing: chat logs and versions need write, the share-link list manage. */
  const viewOnly = (appId: string, folderId: string): [string, string, Record<string, unknown>][] => [
    ['POST', '/core/app/version/list', { appId, offset: 0, pageSize: 10 }],
    ['GET', '/core/app/version/latest', { appId }],
    ['POST', '/core/app/getChatLogs', { appId, pageNum: 1, pageSize: 10 }],
    ['GET', '/support/outLink/list', { appId, type: 'share' }],
    ['GET', '/core/app/folder/path', { parentId: folderId }],
  ];

  it('read no app and no permission row when warm; a write reads the app once', async () => {
    const folderId = await createFolder(a, tok.boss as string, 'view folder');
    const id = await createApp(a, tok.boss as string, { name: 'viewed', parentId: folderId, type: 'advanced', modules: simpleChatGraph.nodes, edges: simpleChatGraph.edges });
    for (const [method, url, body] of viewOnly(id, folderId)) {
      expect((await call(a, tok.boss as string, method, url, body)).status, url).toBe(200);
      const commands = await commandsDuring(a.app, async () => expect((await call(a, tok.boss as string, method, url, body)).status).toBe(200));
      expect(routeWork(commands).filter((command) => / (apps|resource_permissions)$/.test(command)), url).toEqual([]);
    }
    // A publish (a write) is judged on the database and uses the app it read there: two app reads,
    // the app and the folder it inherits from (three before: the app was read again to use it).
    const publish = await commandsDuring(a.app, () => ok(a, tok.boss as string, 'POST', `/core/app/version/publish?appId=${id}`, { ...simpleChatGraph, isPublish: true }));
    expect(routeWork(publish).filter((command) => command === 'find apps')).toHaveLength(2);
    const path = await call(a, tok.boss as string, 'GET', '/core/app/folder/path', { parentId: id });
    expect(path.data).toEqual([
      { parentId: folderId, parentName: 'view folder' },
      { parentId: id, parentName: 'viewed' },
    ]);
  });

  it('a member who loses write is refused on the other process at once, and a write granted is honoured', async () => {
    const folderId = await createFolder(a, tok.boss as string, 'granted folder');
    const id = await createApp(a, tok.boss as string, { name: 'granted', parentId: folderId });
    await update('boss', { appId: id, defaultPermission: 4 });
    const refusedEverywhere = async () => {
      for (const [method, url, body] of viewOnly(id, folderId).slice(0, 4)) expect((await call(b, tok.rita as string, method, url, body)).status, url).toBe(403);
    };
    await refusedEverywhere();
    await ok(a, tok.boss as string, 'POST', '/core/app/collaborator/update', { appId: id, tmbIds: [ritaTmbId], permission: 6 });
    for (const [method, url, body] of viewOnly(id, folderId).slice(0, 3)) expect((await call(b, tok.rita as string, method, url, body)).status, url).toBe(200);
    // Manage is not write: the share-link list stays closed.
    expect((await call(b, tok.rita as string, 'GET', '/support/outLink/list', { appId: id, type: 'share' })).status).toBe(403);
    await ok(a, tok.boss as string, 'GET', '/proApi/core/app/collaborator/delete', { appId: id, tmbId: ritaTmbId });
    await refusedEverywhere();
    // Another team's caller gets the database's answer.
    expect((await call(b, tok.eve as string, 'POST', '/core/app/getChatLogs', { appId: id, pageNum: 1, pageSize: 10 })).body).toMatchObject({ statusText: 'unAuthApp' });
  });
});

describe('app authorisation follows every write at once, on both processes', () => {
  it('the same errors as a database read: malformed 400, unknown 404, another team 403', async () => {
    const mine = await createApp(a, tok.boss as string, { name: 'mine' });
    const theirs = await createApp(a, tok.eve as string, { name: 'theirs' });
    await detail(b, 'boss', mine);
    expect((await detail(b, 'boss', 'not-an-id')).status).toBe(400);
    expect((await detail(b, 'boss', '0123456789abcdef01234567')).body).toMatchObject({ statusText: 'appUnExist' });
    expect((await detail(b, 'boss', theirs)).body).toMatchObject({ statusText: 'unAuthApp' });
    expect((await rename(b, 'boss', theirs, 'taken')).status).toBe(403);
    expect((await detail(a, 'eve', theirs)).data.name).toBe('theirs');
  });

  it('a default permission change opens, then closes, an app to a read-only member', async () => {
    const id = await createApp(a, tok.boss as string, { name: 'private' });
    expect(await status(b, 'rita', id)).toBe(403);
    await update('boss', { appId: id, defaultPermission: 4 });
    expect(await status(b, 'rita', id)).toBe(200);
    expect((await rename(b, 'rita', id, 'not allowed')).status).toBe(403);
    await update('boss', { appId: id, defaultPermission: 0 });
    expect(await status(b, 'rita', id)).toBe(403);
  });

  it('collaborator update grants write, collaborator delete takes it away', async () => {
    const id = await createApp(a, tok.boss as string, { name: 'shared' });
    expect((await rename(b, 'rita', id, 'early')).status).toBe(403);
    await ok(a, tok.boss as string, 'POST', '/core/app/collaborator/update', { appId: id, tmbIds: [ritaTmbId], permission: 6 });
    expect((await rename(b, 'rita', id, 'by rita')).status).toBe(200);
    expect((await detail(b, 'rita', id)).data.name).toBe('by rita');
    await ok(a, tok.boss as string, 'GET', '/proApi/core/app/collaborator/delete', { appId: id, tmbId: ritaTmbId });
    expect((await rename(b, 'rita', id, 'late')).status).toBe(403);
    expect(await status(b, 'rita', id)).toBe(403);
  });

  it('an inheriting app follows its folder: folder default change, move, inheritance resumed', async () => {
    const open = await createFolder(a, tok.boss as string, 'open');
    const closed = await createFolder(a, tok.boss as string, 'closed');
    await update('boss', { appId: open, defaultPermission: 4 });
    const id = await createApp(a, tok.boss as string, { name: 'inside', parentId: open });
    expect(await status(b, 'rita', id)).toBe(200);
    // The folder closes: its inheriting app is judged on it live.
    await update('boss', { appId: open, defaultPermission: 0 });
    expect(await status(b, 'rita', id)).toBe(403);
    await update('boss', { appId: open, defaultPermission: 4 });
    expect(await status(b, 'rita', id)).toBe(200);
    // Moved into a closed folder, it inherits that folder's permissions.
    await update('boss', { appId: id, parentId: closed });
    expect(await status(b, 'rita', id)).toBe(403);
    await update('boss', { appId: id, parentId: open });
    expect(await status(b, 'rita', id)).toBe(200);
    // Its own default breaks inheritance; resuming it follows the open folder again.
    await update('boss', { appId: id, defaultPermission: 0 });
    expect(await status(b, 'rita', id)).toBe(403);
    await ok(a, tok.boss as string, 'POST', '/core/app/resumeInheritPermission', { appId: id });
    expect(await status(b, 'rita', id)).toBe(200);
  });

  it('a deleted app is gone, a new one is there', async () => {
    const id = await createApp(a, tok.boss as string, { name: 'doomed' });
    expect(await status(b, 'boss', id)).toBe(200);
    await ok(a, tok.boss as string, 'POST', '/core/app/del', { appId: id });
    expect((await detail(b, 'boss', id)).body).toMatchObject({ statusText: 'appUnExist' });
    const created = await createApp(a, tok.boss as string, { name: 'newborn' });
    expect((await detail(b, 'boss', created)).data.name).toBe('newborn');
  });

  it('a draft save is in the next detail (the whole app is cached under the workflow stamp too)', async () => {
    const id = await createApp(a, tok.boss as string, { name: 'drafted', type: 'advanced', modules: simpleChatGraph.nodes, edges: simpleChatGraph.edges });
    expect((await detail(b, 'boss', id)).data.modules).toHaveLength(simpleChatGraph.nodes.length);
    await update('boss', { appId: id, nodes: simpleChatGraph.nodes.slice(1), edges: [] });
    const after = (await detail(b, 'boss', id)).data;
    expect(after.modules).toHaveLength(simpleChatGraph.nodes.length - 1);
    expect(after.edges).toEqual([]);
  });
});

describe('a process that dies between a write and its stamp bump', () => {
  it('is replayed and bumped by the sweep of any process: the other process refuses right after it', async () => {
    const id = await createApp(a, tok.boss as string, { name: 'dying share' });
    await ok(a, tok.boss as string, 'POST', '/core/app/collaborator/update', { appId: id, tmbIds: [ritaTmbId], permission: 4 });
    const rows = a.app.mongo.db.collection('resource_permissions');
    expect(await rows.countDocuments({ resourceId: new ObjectId(id) })).toBe(1);
    expect(await status(b, 'rita', id)).toBe(200);
    // Process a's permission service as it dies: the row is removed, the bump never happens.
    const dying = createAppPermissionService(a.app.mongo.db, {
      memberProfiles: a.app.identity.teams.memberProfiles,
      onChange: async () => {
        throw new Error('the process died before the bump');
      },
    });
    const boss = { ...bossIds, role: 'owner', teamPermission: 7, isRoot: false };
    const doc = await dying.tree.findById(id);
    await expect(dying.deleteCollaborator(boss, doc!, ritaTmbId)).rejects.toThrow(/died/);
    expect(await rows.countDocuments({ resourceId: new ObjectId(id) })).toBe(0);
    // The journal keeps the change; the sweep (start-up, then every 15 s) applies it again and bumps.
    await b.app.apps.deps.perms.finishInterrupted();
    expect(await status(b, 'rita', id)).toBe(403);
    expect(await a.app.mongo.db.collection('resource_tree_changes').countDocuments({})).toBe(0);
  });

  it('writes are judged on the database: an app whose delete was never bumped (its process died) takes no new version, copy or input guide', async () => {
    const id = await createApp(a, tok.boss as string, { name: 'vanishing', type: 'advanced', modules: simpleChatGraph.nodes, edges: simpleChatGraph.edges });
    expect(await status(b, 'boss', id)).toBe(200);
    const versions = a.app.mongo.db.collection('app_versions');
    const versionsBefore = await versions.countDocuments({ appId: new ObjectId(id) });
    await a.app.mongo.db.collection('apps').deleteOne({ _id: new ObjectId(id) });
    const publish = await call(b, tok.boss as string, 'POST', `/core/app/version/publish?appId=${id}`, { ...simpleChatGraph, isPublish: true, versionName: 'v1' });
    expect(publish.body).toMatchObject({ statusText: 'appUnExist' });
    expect((await call(b, tok.boss as string, 'POST', '/core/app/copy', { appId: id })).body).toMatchObject({ statusText: 'appUnExist' });
    expect(await versions.countDocuments({ appId: new ObjectId(id) })).toBe(versionsBefore);
    // A write that reads nothing of the app itself: only its authorisation can refuse it.
    const guide = await call(b, tok.boss as string, 'POST', '/core/chat/inputGuide/create', { appId: id, textList: ['orphan?'] });
    expect(guide.body).toMatchObject({ statusText: 'appUnExist' });
    expect(await a.app.mongo.db.collection('chat_input_guides').countDocuments({})).toBe(0);
  });
});

describe('a change racing a delete', () => {
  it('a collaborator change judges the app again under the lock: one deleted since the first check gets no rows', async () => {
    const id = await createApp(a, tok.boss as string, { name: 'deleted meanwhile' });
    const db = a.app.mongo.db;
    const changing = createAppPermissionService(db, {
      // Called between the first check and the tree lock: another process deletes the app meanwhile.
      memberProfiles: async (teamId, tmbIds) => {
        await db.collection('apps').deleteOne({ _id: new ObjectId(id) });
        return a.app.identity.teams.memberProfiles(teamId, tmbIds);
      },
    });
    const boss = { ...bossIds, role: 'owner', teamPermission: 7, isRoot: false };
    const doc = await changing.tree.findById(id);
    await expect(changing.updateCollaborators(boss, doc!, [ritaTmbId], 4)).rejects.toMatchObject({ statusText: 'appUnExist' });
    expect(await db.collection('resource_permissions').countDocuments({ resourceId: new ObjectId(id) })).toBe(0);
  });
});
