import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../src/infra/errors.js';
import type { PermissionCaller } from '../../src/platform/permissions/index.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';
import { call, createApp, ok } from './apps-helpers.js';

/**
 * A folder's owner holds no row on it (ownership is `tmbId`). Whatever copies a folder's rows
 * instead of following it live (a plain resource that stops inheriting, a sub-folder created in
 * it) keeps the owner as manage; and resuming inheritance, which replaces a resource's own rows,
 * obeys the collaborator routes' rule that only an owner changes a member who manages. The
 * permission service is shared: every case runs for apps and for datasets.
 */
let t: TestApp;
let teamId: string;
const tok: Record<string, string> = {};
const tmb: Record<string, string> = {};
const members = ['olga', 'carl', 'mona', 'nick', 'xena'] as const;

beforeAll(async () => {
  t = await buildTestApp({ PLAN_MAX_DATASETS: '1000' });
  const boss = await createUser(t, { username: 'ok-boss', password: 'password-1' });
  teamId = boss.teamId;
  for (const name of members) {
    tmb[name] = (await createUser(t, { username: `ok-${name}`, password: 'password-1', teamId, role: 'member', permission: 6 })).tmbId;
    tok[name] = await login(t, `ok-${name}`, 'password-1');
  }
});
afterAll(() => t.close());

type Level = 'owner' | 'manage' | 'write' | 'read' | 'none' | `HTTP ${number}`;
type Outcome = { status: number; statusText: string; message: string };

/** One resource kind as the tests drive it; datasets have no collaborator routes (community edition), so theirs go through the service. */
interface Kind {
  name: 'app' | 'dataset';
  folder(who: string, name: string, parentId?: string): Promise<string>;
  plain(who: string, name: string, parentId: string): Promise<string>;
  setCollaborator(who: string, id: string, target: string, permission: number): Promise<Outcome>;
  deleteCollaborator(who: string, id: string, target: string): Promise<Outcome>;
  setDefault(who: string, id: string, defaultPermission: number): Promise<Outcome>;
  resume(who: string, id: string): Promise<Outcome>;
  level(who: string, id: string): Promise<Level>;
  /** Who holds a row on the resource. */
  rowHolders(id: string): Promise<string[]>;
  listed(who: string, parentId: string): Promise<{ name: string; permission: { hasManagePer: boolean } }[]>;
}

const caller = (who: string): PermissionCaller => ({ teamId, tmbId: tmb[who] as string, role: 'member', teamPermission: 6, isRoot: false });
const outcome = (r: Awaited<ReturnType<typeof call>>): Outcome => ({ status: r.status, statusText: r.body.statusText, message: r.body.message });
async function viaService(run: () => Promise<void>): Promise<Outcome> {
  try {
    await run();
    return { status: 200, statusText: '', message: '' };
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    return { status: error.httpStatus, statusText: error.statusText, message: error.message };
  }
}
function levelOf(r: Awaited<ReturnType<typeof call>>): Level {
  if (r.status !== 200) return `HTTP ${r.status}`;
  const p = r.data.permission;
  return p.isOwner || p.value === 0xffffffff ? 'owner' : p.hasManagePer ? 'manage' : p.hasWritePer ? 'write' : p.hasReadPer ? 'read' : 'none';
}

const holders = async (service: { rows: { listByResource(teamId: string, id: string): Promise<{ tmbId: string }[]> } }, id: string) =>
  (await service.rows.listByResource(teamId, id)).map((row) => members.find((name) => tmb[name] === row.tmbId) ?? row.tmbId).sort();

const apps: Kind = {
  name: 'app',
  async folder(who, name, parentId) {
    await ok(t, tok[who] as string, 'POST', '/core/app/folder/create', { name, parentId: parentId ?? null });
    const list = await ok(t, tok[who] as string, 'POST', '/core/app/list', { parentId: parentId ?? null, type: 'folder' });
    return list.find((a: { name: string }) => a.name === name)._id;
  },
  plain: (who, name, parentId) => createApp(t, tok[who] as string, { name, parentId }),
  setCollaborator: async (who, id, target, permission) =>
    outcome(await call(t, tok[who] as string, 'POST', '/core/app/collaborator/update', { appId: id, tmbIds: [tmb[target]], permission })),
  deleteCollaborator: async (who, id, target) => outcome(await call(t, tok[who] as string, 'POST', '/core/app/collaborator/delete', { appId: id, tmbId: tmb[target] })),
  setDefault: async (who, id, defaultPermission) => outcome(await call(t, tok[who] as string, 'POST', '/core/app/update', { appId: id, defaultPermission })),
  resume: async (who, id) => outcome(await call(t, tok[who] as string, 'POST', '/core/app/resumeInheritPermission', { appId: id })),
  level: async (who, id) => levelOf(await call(t, tok[who] as string, 'GET', '/core/app/detail', { appId: id })),
  listed: (who, parentId) => ok(t, tok[who] as string, 'POST', '/core/app/list', { parentId }),
  rowHolders: (id) => holders(t.app.apps.deps.perms, id),
};

const perms = () => t.app.datasets.ctx.permissions;
const datasetDoc = async (id: string) => (await perms().tree.findById(id)) as NonNullable<Awaited<ReturnType<ReturnType<typeof perms>['tree']['findById']>>>;
const datasets: Kind = {
  name: 'dataset',
  async folder(who, name, parentId) {
    await ok(t, tok[who] as string, 'POST', '/core/dataset/folder/create', { name, parentId: parentId ?? null });
    const list = await ok(t, tok[who] as string, 'POST', '/core/dataset/list', { parentId: parentId ?? null, type: 'folder' });
    return list.find((d: { name: string }) => d.name === name)._id;
  },
  plain: (who, name, parentId) => ok(t, tok[who] as string, 'POST', '/core/dataset/create', { name, parentId }),
  setCollaborator: (who, id, target, permission) => viaService(async () => perms().updateCollaborators(caller(who), await datasetDoc(id), [tmb[target] as string], permission)),
  deleteCollaborator: (who, id, target) => viaService(async () => perms().deleteCollaborator(caller(who), await datasetDoc(id), tmb[target] as string)),
  setDefault: async (who, id, defaultPermission) => outcome(await call(t, tok[who] as string, 'POST', '/core/dataset/update', { id, defaultPermission })),
  resume: async (who, id) => outcome(await call(t, tok[who] as string, 'POST', '/core/dataset/resumeInheritPermission', { datasetId: id })),
  level: async (who, id) => levelOf(await call(t, tok[who] as string, 'GET', '/core/dataset/detail', { id })),
  listed: (who, parentId) => ok(t, tok[who] as string, 'POST', '/core/dataset/list', { parentId }),
  rowHolders: (id) => holders(perms(), id),
};

let unique = 0;
const label = (what: string) => `${what} ${++unique}`;

describe.each([apps, datasets])('$name: the owner of a folder keeps access to what copies it', (kind) => {
  /** Olga's folder F: Carl may write it, Mona manages it; Carl's plain resource A in it follows it live. */
  async function olgasFolderWithCarlsResource() {
    const F = await kind.folder('olga', label('olga F'));
    expect((await kind.setCollaborator('olga', F, 'carl', 6)).status).toBe(200);
    expect((await kind.setCollaborator('olga', F, 'mona', 7)).status).toBe(200);
    const A = await kind.plain('carl', label('carl A'), F);
    expect(await kind.level('olga', A)).toBe('owner');
    return { F, A };
  }

  it('F1: a manager adding a collaborator to a resource in the folder does not shut its owner out', async () => {
    const { A } = await olgasFolderWithCarlsResource();
    expect((await kind.setCollaborator('mona', A, 'xena', 4)).status).toBe(200);
    expect(await kind.level('xena', A)).toBe('read');
    expect(await kind.level('carl', A)).toBe('owner');
    expect(await kind.level('olga', A)).toBe('manage');
    // As a manager of A now, she is protected like one: Mona may not drop her.
    const drop = await kind.deleteCollaborator('mona', A, 'olga');
    expect(drop).toMatchObject({ status: 403, message: 'Only the owner can change a member who manages this resource' });
    // And she can take it back under her folder, where she owns it again.
    expect((await kind.resume('olga', A)).status).toBe(200);
    expect(await kind.level('olga', A)).toBe('owner');
  });

  it('F1: a manager changing the default permission of a resource in the folder does not shut its owner out', async () => {
    const { A } = await olgasFolderWithCarlsResource();
    expect((await kind.setDefault('mona', A, 4)).status).toBe(200);
    expect(await kind.level('nick', A)).toBe('read');
    expect(await kind.level('olga', A)).toBe('manage');
    expect(await kind.level('mona', A)).toBe('manage');
  });

  it('F1: a manager cannot drop the folder owner from a resource that still follows the folder', async () => {
    const { A } = await olgasFolderWithCarlsResource();
    const drop = await kind.setCollaborator('mona', A, 'olga', 0);
    expect(drop).toMatchObject({ status: 403, message: 'Only the owner can change a member who manages this resource' });
    expect(await kind.level('olga', A)).toBe('owner');
  });

  it('F2: a sub-folder a writer creates in the folder, and what is in it, stay visible to the folder owner', async () => {
    const F = await kind.folder('olga', label('olga F'));
    expect((await kind.setCollaborator('olga', F, 'carl', 6)).status).toBe(200);
    const subName = label('carl sub');
    const S = await kind.folder('carl', subName, F);
    const B = await kind.plain('carl', label('carl B'), S);
    const listed = (await kind.listed('olga', F)).find((item) => item.name === subName);
    expect(listed?.permission.hasManagePer).toBe(true);
    expect(await kind.level('olga', S)).toBe('manage');
    expect(await kind.level('olga', B)).toBe('manage');
    // One level further (Nick may write S): Carl's rights as S's owner reach Nick's sub-folder too.
    expect((await kind.setCollaborator('carl', S, 'nick', 6)).status).toBe(200);
    const N = await kind.folder('nick', label('nick sub'), S);
    expect(await kind.level('olga', N)).toBe('manage');
    expect(await kind.level('carl', N)).toBe('manage');
  });

  it('F2: a folder the parent owner creates in it gets no row for her (she owns it); one a writer makes gets one', async () => {
    const F = await kind.folder('olga', label('olga F'));
    expect((await kind.setCollaborator('olga', F, 'carl', 6)).status).toBe(200);
    const S = await kind.folder('olga', label('olga sub'), F);
    expect(await kind.level('olga', S)).toBe('owner');
    expect(await kind.level('carl', S)).toBe('write');
    expect(await kind.rowHolders(S)).toEqual(['carl']);
    const C = await kind.folder('carl', label('carl sub'), F);
    expect(await kind.rowHolders(C)).toEqual(['carl', 'olga']);
  });

  /** Olga's folder F (Mona manages it); Olga's resource A in it with its own rows: Mona 7, Nick 7. */
  async function coManagers() {
    const F = await kind.folder('olga', label('olga F'));
    expect((await kind.setCollaborator('olga', F, 'mona', 7)).status).toBe(200);
    const A = await kind.plain('olga', label('olga A'), F);
    expect((await kind.setCollaborator('olga', A, 'nick', 7)).status).toBe(200);
    return { F, A };
  }

  it('F3: a manager cannot drop a co-manager by resuming inheritance', async () => {
    const { A } = await coManagers();
    const direct = await kind.deleteCollaborator('mona', A, 'nick');
    expect(direct.status).toBe(403);
    const resumed = await kind.resume('mona', A);
    expect(resumed).toEqual(direct);
    expect(resumed.statusText).toBe(kind.name === 'app' ? 'unAuthApp' : 'unAuthDataset');
    expect(await kind.level('nick', A)).toBe('manage');
    // The owner may.
    expect((await kind.resume('olga', A)).status).toBe(200);
    expect(await kind.level('nick', A)).toBe('HTTP 403');
    expect(await kind.level('mona', A)).toBe('manage');
  });

  it('F3: a manager may resume when no manager loses manage', async () => {
    const { F, A } = await coManagers();
    expect((await kind.setCollaborator('olga', F, 'nick', 7)).status).toBe(200);
    expect((await kind.setCollaborator('mona', A, 'xena', 4)).status).toBe(200);
    expect((await kind.resume('mona', A)).status).toBe(200);
    expect(await kind.level('nick', A)).toBe('manage');
    expect(await kind.level('xena', A)).toBe('HTTP 403');
  });

  it('F3: a folder too: resuming may not drop a manager the parent does not grant manage', async () => {
    const F = await kind.folder('olga', label('olga F'));
    expect((await kind.setCollaborator('olga', F, 'mona', 7)).status).toBe(200);
    const S = await kind.folder('olga', label('olga sub'), F);
    expect((await kind.setCollaborator('olga', S, 'nick', 7)).status).toBe(200);
    expect((await kind.resume('mona', S)).status).toBe(403);
    expect(await kind.level('nick', S)).toBe('manage');
    expect((await kind.resume('olga', S)).status).toBe(200);
    expect(await kind.level('nick', S)).toBe('HTTP 403');
  });
});
