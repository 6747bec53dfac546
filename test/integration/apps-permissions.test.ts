import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';
import { call, createApp, createFolder, ok } from './apps-helpers.js';

/**
 * The spec's "States and transitions" table played through HTTP: after each transition a
 * member sees, edits or is refused as the table says.
 */
let t: TestApp;
const tok: Record<string, string> = {};
const tmb: Record<string, string> = {};

async function access(who: string, appId: string): Promise<'none' | 'read' | 'write' | 'manage'> {
  const r = await call(t, tok[who] as string, 'GET', '/core/app/detail', { appId });
  if (r.status === 403) return 'none';
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  const p = r.data.permission;
  return p.hasManagePer ? 'manage' : p.hasWritePer ? 'write' : 'read';
}
const detail = (appId: string) => ok(t, tok.wendy as string, 'GET', '/core/app/detail', { appId });
const setCollaborator = (appId: string, who: string, permission: number) =>
  ok(t, tok.wendy as string, 'POST', '/proApi/core/app/collaborator/update', { appId, tmbIds: [tmb[who]], permission });
const collaborators = async (appId: string) =>
  (await ok(t, tok.wendy as string, 'GET', '/core/app/collaborator/list', { appId })).map((c: { tmbId: string; permission: { value: number } }) => [
    Object.keys(tmb).find((k) => tmb[k] === c.tmbId),
    c.permission.value,
  ]);
const update = (appId: string, body: Record<string, unknown>) => call(t, tok.wendy as string, 'PUT', `/core/app/update?appId=${appId}`, body);

let F1: string;
let F2: string;
let F3: string;
let F4: string;
let A2: string;
let A3: string;

beforeAll(async () => {
  t = await buildTestApp();
  const boss = await createUser(t, { username: 'perm-boss', password: 'password-1' });
  for (const [name, permission] of [
    ['wendy', 6],
    ['rita', 4],
    ['carl', 4],
  ] as const) {
    const user = await createUser(t, { username: `perm-${name}`, password: 'password-1', teamId: boss.teamId, role: 'member', permission });
    tmb[name] = user.tmbId;
  }
  for (const name of ['boss', 'wendy', 'rita', 'carl']) tok[name] = await login(t, `perm-${name}`, 'password-1');
  // F1 (Rita read) > F2 (copy) > F3 (copy); A3 in F1, A2 in F2; F4 at root with Carl manage.
  F1 = await createFolder(t, tok.wendy as string, 'F1');
  await setCollaborator(F1, 'rita', 4);
  F2 = await createFolder(t, tok.wendy as string, 'F2', F1);
  F3 = await createFolder(t, tok.wendy as string, 'F3', F2);
  A2 = await createApp(t, tok.wendy as string, { name: 'A2', parentId: F2 });
  A3 = await createApp(t, tok.wendy as string, { name: 'A3', parentId: F1 });
  F4 = await createFolder(t, tok.wendy as string, 'F4');
  await setCollaborator(F4, 'carl', 7);
});
afterAll(() => t.close());

describe('permission inheritance end to end', () => {
  it('starts as the contract says: folders copy, apps follow live, the team owner owns all', async () => {
    expect(await collaborators(F2)).toEqual([['rita', 4]]);
    expect(await collaborators(F3)).toEqual([['rita', 4]]);
    expect(await collaborators(A2)).toEqual([['rita', 4]]);
    expect(await access('rita', A2)).toBe('read');
    expect(await access('carl', A2)).toBe('none');
    expect(await access('boss', A2)).toBe('manage');
    const asRita = await ok(t, tok.rita as string, 'GET', '/core/app/detail', { appId: A2 });
    expect(asRita.modules).toEqual([]);
    expect((await update(A2, { name: 'x' })).status).toBe(200);
    expect((await call(t, tok.rita as string, 'PUT', `/core/app/update?appId=${A2}`, { name: 'y' })).status).toBe(403);
    const ritaList = await ok(t, tok.rita as string, 'POST', '/core/app/list', { parentId: F2 });
    expect(ritaList.map((a: { name: string }) => a.name).sort()).toEqual(['F3', 'x']);
    const carlList = await call(t, tok.carl as string, 'POST', '/core/app/list', { parentId: F2 });
    expect(carlList.status).toBe(403);
  });

  it('row 1: inherited folder default change turns inheritance off and syncs child folders', async () => {
    expect((await update(F2, { defaultPermission: 6 })).status).toBe(200);
    expect(await detail(F2)).toMatchObject({ inheritPermission: false, defaultPermission: 6 });
    expect((await detail(F3)).defaultPermission).toBe(6);
    expect(await access('carl', A2)).toBe('write');
    expect(await access('carl', F3)).toBe('write');
    expect((await ok(t, tok.carl as string, 'GET', '/core/app/detail', { appId: A2 })).modules.length).toBeGreaterThan(0);
  });

  it('row 2: inherited resource default change copies the parent collaborators', async () => {
    expect(await access('rita', A3)).toBe('read');
    // Setting the value it already inherits (F1's 0) changes nothing.
    expect((await update(A3, { defaultPermission: 0 })).status).toBe(200);
    expect((await detail(A3)).inheritPermission).toBe(true);
    await setCollaborator(F1, 'rita', 6);
    await setCollaborator(F1, 'rita', 4);
    expect((await update(A3, { defaultPermission: 4 })).status).toBe(200);
    expect(await detail(A3)).toMatchObject({ inheritPermission: false, defaultPermission: 4 });
    expect(await collaborators(A3)).toEqual([['rita', 4]]);
    expect(await access('rita', A3)).toBe('read');
    expect(await access('carl', A3)).toBe('read');
    // Later changes on the folder no longer reach it.
    await setCollaborator(F1, 'rita', 6);
    expect(await access('rita', A3)).toBe('read');
  });

  it('row 3: non-inherited folder default change syncs child folders', async () => {
    expect((await update(F2, { defaultPermission: 4 })).status).toBe(200);
    expect((await detail(F3)).defaultPermission).toBe(4);
    expect(await access('carl', A2)).toBe('read');
  });

  it('row 4: non-inherited resource default change only changes it', async () => {
    expect((await update(A3, { defaultPermission: 6 })).status).toBe(200);
    expect(await detail(A3)).toMatchObject({ inheritPermission: false, defaultPermission: 6 });
    expect(await access('carl', A3)).toBe('write');
    expect((await detail(F1)).defaultPermission).toBe(0);
  });

  it('row 5: an inherited folder moved takes the new parent default and collaborators', async () => {
    expect((await update(F3, { parentId: F4 })).status).toBe(200);
    expect(await detail(F3)).toMatchObject({ parentId: F4, defaultPermission: 0, inheritPermission: true });
    expect(await collaborators(F3)).toEqual([['carl', 7]]);
    expect(await access('rita', F3)).toBe('none');
    expect(await access('carl', F3)).toBe('manage');
  });

  it('row 6: an inherited resource moved only changes parent and follows the new one', async () => {
    expect((await update(A2, { parentId: F4 })).status).toBe(200);
    expect(await detail(A2)).toMatchObject({ parentId: F4, inheritPermission: true });
    expect(await access('carl', A2)).toBe('manage');
    expect(await access('rita', A2)).toBe('none');
  });

  it('row 7: a non-inherited resource or folder moved keeps its own permissions', async () => {
    expect((await update(A3, { parentId: F4 })).status).toBe(200);
    expect(await detail(A3)).toMatchObject({ parentId: F4, inheritPermission: false, defaultPermission: 6 });
    expect(await access('rita', A3)).toBe('read');
    expect((await update(F2, { parentId: F4 })).status).toBe(200);
    expect(await detail(F2)).toMatchObject({ inheritPermission: false, defaultPermission: 4 });
    expect(await collaborators(F2)).toEqual([['rita', 4]]);
  });

  it('row 8: resumeInheritPermission makes it inherit again', async () => {
    await ok(t, tok.wendy as string, 'GET', '/core/app/resumeInheritPermission', { appId: A3 });
    expect(await detail(A3)).toMatchObject({ inheritPermission: true, defaultPermission: 0 });
    expect(await collaborators(A3)).toEqual([['carl', 7]]);
    expect(await access('rita', A3)).toBe('none');
    expect(await access('carl', A3)).toBe('manage');
    await ok(t, tok.wendy as string, 'GET', '/core/app/resumeInheritPermission', { appId: F2 });
    expect(await collaborators(F2)).toEqual([['carl', 7]]);
    expect(await access('rita', F2)).toBe('none');
  });

  it('collaborator edits on an inheriting app break inheritance and keep what it had', async () => {
    const app = await createApp(t, tok.wendy as string, { name: 'clb', parentId: F4 });
    await setCollaborator(app, 'rita', 6);
    expect(await detail(app)).toMatchObject({ inheritPermission: false });
    expect(await collaborators(app)).toEqual(
      expect.arrayContaining([
        ['carl', 7],
        ['rita', 6],
      ]),
    );
    await ok(t, tok.wendy as string, 'DELETE', '/core/app/collaborator/delete', { appId: app, tmbId: tmb.rita });
    expect(await access('rita', app)).toBe('none');
    // A manager who is not the owner cannot change another manager.
    const asCarl = await call(t, tok.carl as string, 'POST', '/core/app/collaborator/update', { appId: F4, tmbIds: [tmb.rita], permission: 7 });
    expect(asCarl.status).toBe(200);
    const carlOnRita = await call(t, tok.carl as string, 'POST', '/core/app/collaborator/update', { appId: F4, tmbIds: [tmb.rita], permission: 4 });
    expect(carlOnRita.status).toBe(403);
    const self = await call(t, tok.carl as string, 'POST', '/core/app/collaborator/update', { appId: F4, tmbIds: [tmb.carl], permission: 4 });
    expect(self.status).toBe(403);
    const ritaTries = await call(t, tok.rita as string, 'POST', '/core/app/collaborator/update', { appId: A2, tmbIds: [tmb.carl], permission: 4 });
    expect(ritaTries.status).toBe(403);
  });

  it('a collaborator change on a folder reaches each of its 30 inheriting subfolders', async () => {
    const big = await createFolder(t, tok.wendy as string, 'Big');
    const subfolders = [];
    for (let i = 0; i < 30; i++) subfolders.push(await createFolder(t, tok.wendy as string, `Sub ${i}`, big));
    await ok(t, tok.wendy as string, 'POST', '/proApi/core/app/collaborator/update', { appId: big, tmbIds: [tmb.rita, tmb.carl], permission: 6 });
    for (const sub of subfolders) {
      expect(await collaborators(sub)).toEqual(expect.arrayContaining([['rita', 6], ['carl', 6]]));
    }
    expect(await access('rita', subfolders[29] as string)).toBe('write');
  });

  it('only team members with team write create; only owners delete', async () => {
    const r = await call(t, tok.rita as string, 'POST', '/core/app/folder/create', { name: 'nope' });
    expect(r.status).toBe(403);
    expect(r.body.statusText).toBe('unAuthTeam');
    const del = await call(t, tok.carl as string, 'DELETE', '/core/app/del', { appId: A2 });
    expect(del.status).toBe(403);
    expect(await access('carl', A2)).toBe('manage');
  });
});

describe('moves', () => {
  it('refuses a target that is not a folder, not writable, or inside the item', async () => {
    const plain = await createApp(t, tok.wendy as string, { name: 'plain' });
    const outer = await createFolder(t, tok.wendy as string, 'outer');
    const inner = await createFolder(t, tok.wendy as string, 'inner', outer);
    expect((await update(outer, { parentId: plain })).status).toBe(400);
    expect((await update(outer, { parentId: inner })).status).toBe(400);
    expect((await update(outer, { parentId: outer })).status).toBe(400);
    const carlsFolder = await createFolder(t, tok.boss as string, 'boss only');
    const r = await call(t, tok.carl as string, 'PUT', `/core/app/update?appId=${A2}`, { parentId: carlsFolder });
    expect(r.status).toBe(403);
    expect((await detail(outer)).parentId).toBe(null);
    expect((await detail(A2)).parentId).toBe(F4);
  });

  it('concurrent crossing moves never build a cycle', async () => {
    for (let round = 0; round < 3; round++) {
      const a = await createFolder(t, tok.wendy as string, `cross-a-${round}`);
      const b = await createFolder(t, tok.wendy as string, `cross-b-${round}`);
      const results = await Promise.all([update(a, { parentId: b }), update(b, { parentId: a })]);
      const statuses = results.map((r) => r.status).sort();
      expect(statuses).toEqual([200, 400]);
      const [da, db] = [await detail(a), await detail(b)];
      expect(da.parentId === b && db.parentId === a).toBe(false);
    }
  });
});
