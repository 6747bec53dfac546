import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';
import { call, createApp, createFolder, ok } from './apps-helpers.js';

/**
 * A move changes who can reach a resource: a folder's owner owns everything that inherits from
 * it. Moving therefore needs manage on the resource and on the target folder (manage on the
 * team for the root), for apps, app folders, datasets and dataset folders alike.
 */
let t: TestApp;
let teamId: string;
const tok: Record<string, string> = {};
const tmb: Record<string, string> = {};

beforeAll(async () => {
  t = await buildTestApp();
  const boss = await createUser(t, { username: 'mv-boss', password: 'password-1' });
  teamId = boss.teamId;
  tmb.boss = boss.tmbId;
  // alice and mallory: team write; carol: team write; adam: team manage.
  for (const [name, permission] of [
    ['alice', 6],
    ['mallory', 6],
    ['carol', 6],
    ['adam', 7],
  ] as const) {
    tmb[name] = (await createUser(t, { username: `mv-${name}`, password: 'password-1', teamId, role: 'member', permission })).tmbId;
  }
  for (const name of ['boss', 'alice', 'mallory', 'carol', 'adam']) tok[name] = await login(t, `mv-${name}`, 'password-1');
});
afterAll(() => t.close());

const as = (who: string) => tok[who] as string;
const setAppCollaborator = (owner: string, appId: string, who: string, permission: number) =>
  ok(t, as(owner), 'POST', '/core/app/collaborator/update', { appId, tmbIds: [tmb[who]], permission });

/** Everything a move could change: the resource documents and the team's permission rows. */
async function snapshot(collection: 'apps' | 'datasets') {
  const db = t.app.mongo.db;
  const team = new ObjectId(teamId);
  return {
    docs: await db.collection(collection).find({ teamId: team }).sort({ _id: 1 }).toArray(),
    rows: await db.collection('resource_permissions').find({ teamId: team }).sort({ _id: 1 }).toArray(),
  };
}

describe('moving apps', () => {
  let F: string;
  let X: string;
  let G: string;
  let S: string;

  beforeAll(async () => {
    // F: the boss's folder where Mallory may write. X: Alice's app, G: Alice's folder, Mallory may write both.
    F = await createFolder(t, as('boss'), 'shared F');
    await setAppCollaborator('boss', F, 'mallory', 6);
    X = await createApp(t, as('alice'), { name: 'alice X' });
    await setAppCollaborator('alice', X, 'mallory', 6);
    G = await createFolder(t, as('alice'), 'alice G');
    await setAppCollaborator('alice', G, 'mallory', 6);
    // Mallory creates S inside F: she owns S.
    S = await createFolder(t, as('mallory'), 'mallory S', F);
  });

  it('refuses the issue’s attack: write on an app does not let you move it into your own folder', async () => {
    const before = await snapshot('apps');
    const move = await call(t, as('mallory'), 'POST', '/core/app/update', { appId: X, parentId: S });
    expect(move.status).toBe(403);
    expect(move.body.statusText).toBe('unAuthApp');
    expect(await snapshot('apps')).toEqual(before);
    // Still no owner rights on X: no keys for it, no delete.
    const key = await call(t, as('mallory'), 'POST', '/support/openapi/create', { name: 'stolen', appId: X });
    expect(key.status).toBe(403);
    const del = await call(t, as('mallory'), 'DELETE', '/core/app/del', { appId: X });
    expect(del.status).toBe(403);
    const detail = await ok(t, as('alice'), 'GET', '/core/app/detail', { appId: X });
    expect(detail.parentId).toBe(null);
    expect((await ok(t, as('mallory'), 'GET', '/core/app/detail', { appId: X })).permission).toMatchObject({ isOwner: false, hasManagePer: false });
  });

  it('refuses moving an app folder one may only write into one’s own folder', async () => {
    const before = await snapshot('apps');
    const move = await call(t, as('mallory'), 'PUT', `/core/app/update?appId=${G}`, { parentId: S, name: 'renamed' });
    expect(move.status).toBe(403);
    expect(await snapshot('apps')).toEqual(before);
  });

  it('refuses a target folder the caller may only write, even for her own app', async () => {
    const own = await createApp(t, as('mallory'), { name: 'mallory own', parentId: S });
    const before = await snapshot('apps');
    const move = await call(t, as('mallory'), 'POST', '/core/app/update', { appId: own, parentId: F });
    expect(move.status).toBe(403);
    expect(move.body.statusText).toBe('unAuthApp');
    expect(await snapshot('apps')).toEqual(before);
  });

  it('moving to the root needs manage on the team', async () => {
    const own = await createApp(t, as('mallory'), { name: 'mallory root-bound', parentId: S });
    const before = await snapshot('apps');
    const move = await call(t, as('mallory'), 'POST', '/core/app/update', { appId: own, parentId: null });
    expect(move.status).toBe(403);
    expect(move.body.statusText).toBe('unAuthTeam');
    expect(await snapshot('apps')).toEqual(before);
    // Adam manages the team and, through a collaborator row, the app.
    await setAppCollaborator('mallory', S, 'adam', 7);
    await ok(t, as('adam'), 'POST', '/core/app/update', { appId: own, parentId: null });
    expect((await ok(t, as('mallory'), 'GET', '/core/app/detail', { appId: own })).parentId).toBe(null);
  });

  it('a member with manage on the app and on the target folder moves it', async () => {
    const target = await createFolder(t, as('boss'), 'boss target');
    const app = await createApp(t, as('alice'), { name: 'alice movable' });
    await setAppCollaborator('alice', app, 'carol', 7);
    // Manage on the app alone is not enough while the target is only writable.
    await setAppCollaborator('boss', target, 'carol', 6);
    expect((await call(t, as('carol'), 'POST', '/core/app/update', { appId: app, parentId: target })).status).toBe(403);
    await setAppCollaborator('boss', target, 'carol', 7);
    await ok(t, as('carol'), 'POST', '/core/app/update', { appId: app, parentId: target });
    expect((await ok(t, as('boss'), 'GET', '/core/app/detail', { appId: app })).parentId).toBe(target);
    // A folder the same way.
    const folder = await createFolder(t, as('alice'), 'alice movable folder');
    await setAppCollaborator('alice', folder, 'carol', 7);
    await ok(t, as('carol'), 'POST', '/core/app/update', { appId: folder, parentId: target });
    expect((await ok(t, as('boss'), 'GET', '/core/app/detail', { appId: folder })).parentId).toBe(target);
  });
});

describe('moving datasets (the same shared rule)', () => {
  const create = async (who: string, body: Record<string, unknown>, folder = false) => {
    const r = await ok(t, as(who), 'POST', folder ? '/core/dataset/folder/create' : '/core/dataset/create', body);
    if (!folder) return r as string;
    const list = await ok(t, as(who), 'POST', '/core/dataset/list', { parentId: body.parentId ?? null, type: 'folder' });
    return list.find((d: { name: string }) => d.name === body.name)._id as string;
  };
  const setDefault = (who: string, id: string, defaultPermission: number) => ok(t, as(who), 'POST', '/core/dataset/update', { id, defaultPermission });

  let DF: string;
  let DX: string;
  let DG: string;
  let DS: string;

  beforeAll(async () => {
    // Community edition datasets have no collaborator routes: the team-wide default grants write.
    DF = await create('boss', { name: 'team DF' }, true);
    await setDefault('boss', DF, 6);
    DX = await create('alice', { name: 'alice DX' });
    await setDefault('alice', DX, 6);
    DG = await create('alice', { name: 'alice DG' }, true);
    await setDefault('alice', DG, 6);
    DS = await create('mallory', { name: 'mallory DS', parentId: DF }, true);
  });

  it('refuses moving a dataset one may only write into one’s own folder', async () => {
    const before = await snapshot('datasets');
    const move = await call(t, as('mallory'), 'POST', '/core/dataset/update', { id: DX, parentId: DS });
    expect(move.status).toBe(403);
    expect(move.body.statusText).toBe('unAuthDataset');
    expect(await snapshot('datasets')).toEqual(before);
    expect((await call(t, as('mallory'), 'DELETE', '/core/dataset/delete', { id: DX })).status).toBe(403);
    expect((await ok(t, as('alice'), 'GET', '/core/dataset/detail', { id: DX })).parentId).toBe(null);
  });

  it('refuses moving a dataset folder one may only write', async () => {
    const before = await snapshot('datasets');
    const move = await call(t, as('mallory'), 'PUT', '/core/dataset/update', { id: DG, parentId: DS, name: 'renamed' });
    expect(move.status).toBe(403);
    expect(await snapshot('datasets')).toEqual(before);
  });

  it('refuses a writable-only target and a root move without team manage', async () => {
    const own = await create('mallory', { name: 'mallory dataset', parentId: DS });
    const before = await snapshot('datasets');
    const intoF = await call(t, as('mallory'), 'POST', '/core/dataset/update', { id: own, parentId: DF });
    expect(intoF.status).toBe(403);
    const toRoot = await call(t, as('mallory'), 'POST', '/core/dataset/update', { id: own, parentId: null });
    expect(toRoot.status).toBe(403);
    expect(toRoot.body.statusText).toBe('unAuthTeam');
    expect(await snapshot('datasets')).toEqual(before);
  });

  it('a member with manage on both moves datasets and dataset folders', async () => {
    const target = await create('boss', { name: 'boss managed target' }, true);
    await setDefault('boss', target, 7);
    const dataset = await create('alice', { name: 'alice managed' });
    await setDefault('alice', dataset, 7);
    await ok(t, as('carol'), 'POST', '/core/dataset/update', { id: dataset, parentId: target });
    expect((await ok(t, as('alice'), 'GET', '/core/dataset/detail', { id: dataset })).parentId).toBe(target);
    const folder = await create('alice', { name: 'alice managed folder' }, true);
    await setDefault('alice', folder, 7);
    await ok(t, as('carol'), 'POST', '/core/dataset/update', { id: folder, parentId: target });
    expect((await ok(t, as('alice'), 'GET', '/core/dataset/detail', { id: folder })).parentId).toBe(target);
    // The team manager brings it back to the root.
    await ok(t, as('adam'), 'POST', '/core/dataset/update', { id: dataset, parentId: null });
    expect((await ok(t, as('alice'), 'GET', '/core/dataset/detail', { id: dataset })).parentId).toBe(null);
  });
});
