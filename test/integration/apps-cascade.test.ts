import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createApiKey, createUser, login } from '../helpers/platform.js';
import { chatFileOwner } from '../../src/platform/datasets/files/file.repo.js';
import { call, createApp, createFolder, ok, simpleNodes } from './apps-helpers.js';

let t: TestApp;
let alice: string;
let bob: string;
let aliceTeam: string;

beforeAll(async () => {
  t = await buildTestApp();
  const a = await createUser(t, { username: 'cascade-alice', password: 'password-1' });
  aliceTeam = a.teamId;
  await createUser(t, { username: 'cascade-bob', password: 'password-1' });
  alice = await login(t, 'cascade-alice', 'password-1');
  bob = await login(t, 'cascade-bob', 'password-1');
});
afterAll(() => t.close());

/** Records other modules keep for an app, as their repositories store them. */
async function seedDependents(appId: string) {
  const db = t.app.mongo.db;
  const chatId = `chat-${appId}`;
  const id = new ObjectId(appId);
  for (const n of [1, 2]) {
    await db.collection('chats').insertOne({ teamId: new ObjectId(aliceTeam), appId: id, chatId: `${chatId}${n > 1 ? `-${n}` : ''}`, title: 't', source: 'online', updateTime: new Date() });
    await db.collection('chatitems').insertOne({ teamId: new ObjectId(aliceTeam), appId: id, chatId, dataId: `d${n}`, obj: 'Human' });
    await db.collection('outlinks').insertOne({ teamId: new ObjectId(aliceTeam), appId: id, shareId: `s-${appId}-${n}` });
    await db.collection('chat_input_guides').insertOne({ appId: id, text: `guide ${n}` });
  }
  const metadata = { chatId, teamId: aliceTeam };
  await db.collection('chat.files').insertOne({ length: 0, chunkSize: 255, uploadDate: new Date(), filename: 'f.txt', metadata, ...chatFileOwner(metadata) });
  await createApiKey(t, alice, { name: 'k', appId });
}

async function dependentCounts(appIds: string[]) {
  const db = t.app.mongo.db;
  const match = { appId: { $in: [...appIds, ...appIds.map((id) => new ObjectId(id))] } };
  return {
    apps: await db.collection('apps').countDocuments({ _id: { $in: appIds.map((id) => new ObjectId(id)) } }),
    chats: await db.collection('chats').countDocuments(match),
    chatitems: await db.collection('chatitems').countDocuments(match),
    outlinks: await db.collection('outlinks').countDocuments(match),
    versions: await db.collection('app_versions').countDocuments(match),
    guides: await db.collection('chat_input_guides').countDocuments(match),
    keys: await db.collection('openapis').countDocuments(match),
    files: await db.collection('chat.files').countDocuments({ 'metadata.chatId': { $in: appIds.map((id) => `chat-${id}`) } }),
    permissions: await db.collection('resource_permissions').countDocuments({ resourceType: 'app', resourceId: { $in: appIds.map((id) => new ObjectId(id)) } }),
  };
}

describe('delete cascade', () => {
  it('removes the subtree and every dependent record, and nothing else', async () => {
    const root = await createFolder(t, alice, 'doomed');
    const sub = await createFolder(t, alice, 'doomed/sub', root);
    const a1 = await createApp(t, alice, { name: 'a1', parentId: root });
    const a2 = await createApp(t, alice, { name: 'a2', parentId: sub, type: 'advanced' });
    await ok(t, alice, 'POST', '/core/app/httpPlugin/create', {
      parentId: sub,
      name: 'api',
      pluginData: { apiSchemaStr: JSON.stringify({ openapi: '3.0.0', paths: { '/x': { get: { operationId: 'getX' } } } }) },
    });
    const plugins = await ok(t, alice, 'POST', '/core/app/list', { parentId: sub });
    const http = plugins.find((p: { type: string }) => p.type === 'httpPlugin')._id;
    const child = (await ok(t, alice, 'POST', '/core/app/list', { parentId: http }))[0]._id;
    const keep = await createApp(t, alice, { name: 'keep' });
    const doomed = [root, sub, a1, a2, http, child];
    for (const id of [a1, a2, child, keep]) await seedDependents(id);
    await t.app.mongo.db
      .collection('resource_permissions')
      .insertOne({ resourceType: 'app', teamId: new ObjectId(aliceTeam), tmbId: new ObjectId(), resourceId: new ObjectId(a1), permission: 4 });

    const before = await dependentCounts(doomed);
    expect(before.apps).toBe(6);
    expect(before.chats).toBeGreaterThan(0);
    expect(before.keys).toBe(3);
    expect(before.files).toBe(3);
    expect((await call(t, bob, 'DELETE', '/core/app/del', { appId: root })).status).toBe(403);
    await ok(t, alice, 'DELETE', '/core/app/del', { appId: root });

    expect(await dependentCounts(doomed)).toEqual({ apps: 0, chats: 0, chatitems: 0, outlinks: 0, versions: 0, guides: 0, keys: 0, files: 0, permissions: 0 });
    const kept = await dependentCounts([keep]);
    expect(kept).toMatchObject({ apps: 1, chats: 2, chatitems: 2, outlinks: 2, versions: 1, guides: 2, keys: 1, files: 1 });
    const orphans = await t.app.mongo.db.collection('apps').countDocuments({ parentId: { $in: doomed.map((id) => new ObjectId(id)) } });
    expect(orphans).toBe(0);
    expect((await call(t, alice, 'GET', '/core/app/detail', { appId: root })).status).toBe(404);
  });
});

describe('delete racing with creates and moves', () => {
  it('leaves nothing pointing to the deleted folder', async () => {
    for (let round = 0; round < 3; round++) {
      const folder = await createFolder(t, alice, `racing ${round}`);
      const mover = await createApp(t, alice, { name: `mover ${round}` });
      const results = await Promise.all([
        call(t, alice, 'DELETE', '/core/app/del', { appId: folder }),
        call(t, alice, 'POST', '/core/app/create', { name: 'late child', type: 'simple', modules: [], parentId: folder }),
        call(t, alice, 'POST', '/core/app/folder/create', { name: 'late folder', parentId: folder }),
        call(t, alice, 'PUT', `/core/app/update?appId=${mover}`, { parentId: folder }),
      ]);
      expect(results[0]?.status).toBe(200);
      for (const r of results.slice(1)) expect([200, 404]).toContain(r.status);
      const orphans = await t.app.mongo.db.collection('apps').countDocuments({ parentId: new ObjectId(folder) });
      expect(orphans).toBe(0);
    }
  });
});

describe('chat logs', () => {
  it('pages chats of the app newest first with feedback counts', async () => {
    const app = await createApp(t, alice, { name: 'logged' });
    expect(await ok(t, alice, 'POST', '/core/app/getChatLogs', { appId: app })).toEqual({ pageNum: 1, pageSize: 20, data: [], total: 0 });
    const db = t.app.mongo.db;
    const now = Date.now();
    for (let i = 0; i < 3; i++) {
      await db.collection('chats').insertOne({ teamId: new ObjectId(aliceTeam), appId: new ObjectId(app), chatId: `c${i}`, title: `chat ${i}`, source: 'online', updateTime: new Date(now - i * 1000) });
    }
    await db.collection('chatitems').insertMany([
      { teamId: new ObjectId(aliceTeam), appId: new ObjectId(app), chatId: 'c0', userGoodFeedback: 'yes' },
      { teamId: new ObjectId(aliceTeam), appId: new ObjectId(app), chatId: 'c0', userBadFeedback: 'no', customFeedbacks: ['x'], adminFeedback: { q: 'a' } },
      { teamId: new ObjectId(aliceTeam), appId: new ObjectId(app), chatId: 'c1', userGoodFeedback: 'yes' },
      // Another team's item under the same chatId is not counted.
      { teamId: new ObjectId(), appId: new ObjectId(app), chatId: 'c0', userGoodFeedback: 'other team' },
    ]);
    const page = await ok(t, alice, 'POST', '/core/app/getChatLogs', { appId: app, pageNum: 1, pageSize: 2 });
    expect(page.total).toBe(3);
    expect(page.data.map((c: { id: string }) => c.id)).toEqual(['c0', 'c1']);
    expect(page.data[0]).toMatchObject({ title: 'chat 0', source: 'online', messageCount: 2, userGoodFeedbackCount: 1, userBadFeedbackCount: 1, customFeedbacksCount: 1, markCount: 1 });
    expect(page.data[1]).toMatchObject({ title: 'chat 1', messageCount: 1, userGoodFeedbackCount: 1, userBadFeedbackCount: 0, customFeedbacksCount: 0, markCount: 0 });
    // The last page and one past the end still count every chat of the window.
    const last = await ok(t, alice, 'POST', '/core/app/getChatLogs', { appId: app, pageNum: 2, pageSize: 2 });
    expect([last.total, last.data.map((c: { id: string }) => c.id)]).toEqual([3, ['c2']]);
    const past = await ok(t, alice, 'POST', '/core/app/getChatLogs', { appId: app, pageNum: 3, pageSize: 2 });
    expect([past.total, past.data]).toEqual([3, []]);
  });
});

describe('cross-team refusals', () => {
  it('refuses every app endpoint on another team’s app and changes nothing', async () => {
    const folder = await createFolder(t, alice, 'private folder');
    const app = await createApp(t, alice, { name: 'private app', parentId: folder });
    await ok(t, alice, 'POST', `/core/app/version/publish?appId=${app}`, { nodes: simpleNodes, edges: [], isPublish: true });
    const version = (await ok(t, alice, 'POST', '/core/app/version/list', { appId: app })).list[0]._id;
    const http = await createApp(t, alice, { name: 'hp', type: 'httpPlugin' });
    const bobTmb = (await ok(t, bob, 'GET', '/support/user/account/tokenLogin')).team.tmbId;
    const calls: [string, string, Record<string, unknown>][] = [
      ['GET', '/core/app/detail', { appId: app }],
      ['PUT', `/core/app/update?appId=${app}`, { name: 'hacked' }],
      ['PUT', `/core/app/update?appId=${app}`, { defaultPermission: 7 }],
      ['DELETE', '/core/app/del', { appId: app }],
      ['POST', '/core/app/copy', { appId: app }],
      ['POST', '/core/app/transitionWorkflow', { appId: app }],
      ['GET', '/core/app/resumeInheritPermission', { appId: app }],
      ['POST', '/core/app/getChatLogs', { appId: app }],
      ['POST', '/core/app/list', { parentId: folder }],
      ['GET', '/core/app/folder/path', { parentId: folder }],
      ['POST', '/core/app/folder/create', { name: 'in', parentId: folder }],
      ['POST', '/core/app/create', { name: 'in', type: 'simple', modules: [], parentId: folder }],
      ['POST', '/core/app/httpPlugin/create', { name: 'in', parentId: folder, pluginData: {} }],
      ['POST', '/core/app/httpPlugin/update', { appId: http, name: 'x', pluginData: {} }],
      ['GET', '/core/app/plugin/getPreviewNode', { appId: app }],
      ['POST', `/core/app/version/publish?appId=${app}`, { nodes: [], edges: [] }],
      ['POST', '/core/app/version/list', { appId: app }],
      ['POST', '/core/app/version/listWorkflow', { appId: app }],
      ['GET', '/core/app/version/listWorkflowx', { appId: app }],
      ['GET', '/core/app/version/latest', { appId: app }],
      ['GET', '/core/app/version/detail', { appId: app, versionId: version }],
      ['POST', `/core/app/version/revert?appId=${app}`, { versionId: version }],
      ['POST', '/core/app/version/update', { appId: app, versionId: version, versionName: 'x' }],
      ['GET', '/core/app/collaborator/list', { appId: app }],
      ['POST', '/core/app/collaborator/update', { appId: app, tmbIds: [bobTmb], permission: 7 }],
      ['DELETE', '/proApi/core/app/collaborator/delete', { appId: app, tmbId: bobTmb }],
    ];
    const before = await ok(t, alice, 'GET', '/core/app/detail', { appId: app });
    for (const [method, url, payload] of calls) {
      const r = await call(t, bob, method, url, payload);
      expect(r.status, `${method} ${url}`).toBe(403);
      expect(r.body.statusText, `${method} ${url}`).toBe('unAuthApp');
    }
    const after = await ok(t, alice, 'GET', '/core/app/detail', { appId: app });
    expect(after).toEqual(before);
    expect((await ok(t, alice, 'POST', '/core/app/version/list', { appId: app })).total).toBe(2);
    expect(await ok(t, alice, 'POST', '/core/app/list', { parentId: folder })).toHaveLength(1);
    expect(await ok(t, bob, 'POST', '/core/app/list', {})).toEqual([]);
  });
});
