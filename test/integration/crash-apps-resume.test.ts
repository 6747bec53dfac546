import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { move } from '../../src/domain/permission-inheritance.js';
import { settleExpiredInserts } from '../../src/platform/apps/app-insert-resume.js';
import { createTreeChangesRepo } from '../../src/platform/permissions/tree-changes.repo.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';
import { call, createFolder, ok, simpleNodes } from './apps-helpers.js';

/**
 * What the crash tests (crash-apps.test.ts) cannot stop at deterministically: a permission change
 * interrupted after some of its writes (a database error here) is finished by the next change of
 * the team's tree or by a restart, for apps and dataset folders alike; an insert interrupted
 * before or after its app document is settled as removed (room given back) or as kept.
 */
let t: TestApp;
let teamId: string;
const tok: Record<string, string> = {};
const tmb: Record<string, string> = {};
const oid = (id: string) => new ObjectId(id);

beforeAll(async () => {
  t = await buildTestApp({ PLAN_MAX_APPS: '4' });
  const boss = await createUser(t, { username: 'cr-boss', password: 'password-1' });
  teamId = boss.teamId;
  tmb.boss = boss.tmbId;
  for (const name of ['alice', 'bob']) {
    tmb[name] = (await createUser(t, { username: `cr-${name}`, password: 'password-1', teamId, role: 'member', permission: 4 })).tmbId;
  }
  for (const name of ['boss', 'alice', 'bob']) tok[name] = await login(t, `cr-${name}`, 'password-1');
});
afterAll(() => t.close());

const as = (who: string) => tok[who] as string;
const access = async (target: TestApp, who: string, appId: string) => {
  const r = await call(target, as(who), 'GET', '/core/app/detail', { appId });
  return r.status === 403 ? 'none' : r.data.permission.hasWritePer ? 'write' : 'read';
};
const journal = () => t.app.mongo.db.collection('resource_tree_changes');

/** OLD shares with alice (read), NEW with bob (write); F (inside OLD) holds folder G and app X. */
async function tree(prefix: string) {
  const oldParent = await createFolder(t, as('boss'), `${prefix} OLD`);
  const newParent = await createFolder(t, as('boss'), `${prefix} NEW`);
  await ok(t, as('boss'), 'POST', '/core/app/collaborator/update', { appId: oldParent, tmbIds: [tmb.alice], permission: 4 });
  await ok(t, as('boss'), 'POST', '/core/app/collaborator/update', { appId: newParent, tmbIds: [tmb.bob], permission: 6 });
  const folder = await createFolder(t, as('boss'), `${prefix} F`, oldParent);
  const child = await createFolder(t, as('boss'), `${prefix} G`, folder);
  const app = await ok(t, as('boss'), 'POST', '/core/app/create', { name: `${prefix} X`, type: 'simple', modules: simpleNodes, edges: [], parentId: child });
  return { oldParent, newParent, folder, child, app: app as string };
}

/** Moves F to NEW with the row rewrite failing after its first write, as a database error would. */
async function interruptedMove(target: { folder: string; newParent: string }) {
  const rows = t.app.apps.deps.perms.rows;
  const replace = rows.replace;
  rows.replace = async (...args) => {
    await replace(...args);
    rows.replace = replace;
    throw new Error('simulated database failure');
  };
  const failed = await call(t, as('boss'), 'POST', '/core/app/update', { appId: target.folder, parentId: target.newParent });
  expect(failed.status).toBe(500);
  expect(await journal().countDocuments({})).toBe(1);
}

describe('an interrupted folder move', () => {
  it('is finished by the next change of the team tree, before that change', async () => {
    const x = await tree('next');
    await interruptedMove(x);
    // Half written: the folder has not moved, the rows of its subtree are NEW's already.
    expect((await t.app.apps.deps.apps.findById(x.folder))?.parentId).toBe(x.oldParent);
    const created = await createFolder(t, as('boss'), 'next H', x.child);
    expect(await journal().countDocuments({})).toBe(0);
    expect((await ok(t, as('boss'), 'POST', '/core/app/list', { parentId: x.newParent })).map((a: { _id: string }) => a._id)).toEqual([x.folder]);
    for (const id of [x.folder, x.child, x.app, created]) {
      expect(await access(t, 'alice', id), `alice on ${id}`).toBe('none');
      expect(await access(t, 'bob', id), `bob on ${id}`).toBe('write');
    }
  });

  it('is finished at start-up, before the restarted service answers', async () => {
    const x = await tree('restart');
    await interruptedMove(x);
    const restarted = await buildTestApp({ MONGODB_URI: t.config.MONGODB_URI, PLAN_MAX_APPS: '4' });
    try {
      expect(await journal().countDocuments({})).toBe(0);
      const listed = await call(restarted, as('boss'), 'POST', '/core/app/list', { parentId: x.newParent });
      expect(listed.data.map((a: { _id: string }) => a._id)).toEqual([x.folder]);
      for (const id of [x.folder, x.child, x.app]) {
        expect(await access(restarted, 'alice', id), `alice on ${id}`).toBe('none');
        expect(await access(restarted, 'bob', id), `bob on ${id}`).toBe('write');
      }
    } finally {
      await restarted.app.close();
    }
  });

  it('of a dataset folder is finished at start-up too', async () => {
    const create = async (name: string, parentId: string | null, folder = false) => {
      await ok(t, as('boss'), 'POST', folder ? '/core/dataset/folder/create' : '/core/dataset/create', { name, parentId });
      const list = await ok(t, as('boss'), 'POST', '/core/dataset/list', { parentId });
      return list.find((d: { name: string }) => d.name === name)._id as string;
    };
    const oldParent = await create('ds OLD', null, true);
    const newParent = await create('ds NEW', null, true);
    await ok(t, as('boss'), 'POST', '/core/dataset/update', { id: newParent, defaultPermission: 4 });
    const folder = await create('ds F', oldParent, true);
    const child = await create('ds G', folder, true);
    const dataset = await create('ds D', child);
    const readable = async (target: TestApp, id: string) => (await call(target, as('alice'), 'GET', '/core/dataset/detail', { id })).status;
    for (const id of [folder, child, dataset]) expect(await readable(t, id)).toBe(403);

    // The writes of the move, recorded and not applied: what a crash right after the record leaves.
    const perms = t.app.datasets.ctx.permissions;
    const doc = await perms.tree.findById(folder);
    const target = { id: newParent, defaultPermission: 4, collaborators: [] };
    const writes = move({ resource: perms.toResource(doc as NonNullable<typeof doc>), target, tree: await perms.tree.folderTree(teamId) });
    await createTreeChangesRepo(t.app.mongo.db, 'dataset').record(teamId, writes, new Date());

    const restarted = await buildTestApp({ MONGODB_URI: t.config.MONGODB_URI, PLAN_MAX_APPS: '4' });
    try {
      expect(await journal().countDocuments({})).toBe(0);
      expect((await ok(restarted, as('boss'), 'GET', '/core/dataset/detail', { id: folder })).parentId).toBe(newParent);
      for (const id of [folder, child, dataset]) expect(await readable(restarted, id)).toBe(200);
    } finally {
      await restarted.app.close();
    }
  });
});

describe('an interrupted app insert', () => {
  const inserts = () => t.app.mongo.db.collection('app_inserts');
  const expire = (appId: string) => inserts().updateOne({ _id: oid(appId) }, { $set: { expiresAt: new Date(Date.now() - 1000) } });
  /** A team of its own (plan: 4 apps) and a way to create apps in it. */
  async function team(name: string) {
    const owner = await createUser(t, { username: name, password: 'password-1' });
    const token = await login(t, name, 'password-1');
    const create = (appName: string) => call(t, token, 'POST', '/core/app/create', { name: appName, type: 'simple', modules: simpleNodes, edges: [] });
    const counter = async () => (await t.app.mongo.db.collection<{ _id: string; count: number }>('team_counters').findOne({ _id: `apps:${owner.teamId}` }))?.count;
    return { teamId: owner.teamId, token, create, counter };
  }

  it('that fails before its app document leaves nothing and gives its room back at once', async () => {
    const own = await team('cr-fail');
    const source = (await own.create('to copy')).data as string;
    const { versions } = t.app.apps.deps;
    const insert = versions.insert;
    versions.insert = async () => {
      versions.insert = insert;
      throw new Error('simulated database failure');
    };
    const failed = await call(t, own.token, 'POST', '/core/app/copy', { appId: source });
    expect(failed.status).toBe(500);
    expect((await ok(t, own.token, 'POST', '/core/app/list', {})).map((a: { _id: string }) => a._id)).toEqual([source]);
    expect(await inserts().countDocuments({ teamId: oid(own.teamId) })).toBe(0);
    expect(await own.counter()).toBe(1);
  });

  it('is kept once its app document landed, removed with its room given back otherwise', async () => {
    const own = await team('cr-settle');
    const { core, deps } = t.app.apps;
    for (const name of ['a', 'b']) expect((await own.create(name)).status).toBe(200);
    // A crash after the app document, before its record went: the app is whole.
    const landed = (await own.create('landed')).data as string;
    await inserts().insertOne({ _id: oid(landed), teamId: oid(own.teamId), reserved: 1, createTime: new Date(), expiresAt: new Date(Date.now() - 1000) });
    // A crash after the version, before the app document: the room is taken, nothing shows.
    const lost = new ObjectId().toHexString();
    await t.app.teamLimits.reserveApps(own.teamId, 1);
    await deps.inserts.open(lost, own.teamId, 1);
    await deps.versions.insert({ appId: lost, nodes: simpleNodes, edges: [] });
    await expire(lost);
    expect((await own.create('refused while the lost insert holds the room')).status).toBe(403);

    expect(await settleExpiredInserts(core, deps)).toBe(2);
    expect(await inserts().countDocuments({ teamId: oid(own.teamId) })).toBe(0);
    expect((await ok(t, own.token, 'GET', '/core/app/detail', { appId: landed })).name).toBe('landed');
    expect((await call(t, own.token, 'GET', '/core/app/detail', { appId: lost })).status).toBe(404);
    expect(await t.app.mongo.db.collection('app_versions').countDocuments({ appId: oid(lost) })).toBe(0);
    // The lost insert's room is back, the landed app still counts: one more fits, then none.
    expect((await own.create('fourth')).status).toBe(200);
    expect((await own.create('fifth')).status).toBe(403);
  });
});
