import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { addMember, createUser, login } from '../helpers/platform.js';
import { call, createApp, createFolder, ok } from './apps-helpers.js';

/**
 * Every route that makes an app asks the same of its caller: team write, and write on the folder
 * it lands in. transitionWorkflow's `createNew` asked only ownership of its source, so a member
 * whose write was taken away still made apps in the folder.
 */
let t: TestApp;
let teamId: string;
let boss: string;
let mal: string;
let malTmb: string;

beforeAll(async () => {
  t = await buildTestApp();
  teamId = (await createUser(t, { username: 'cp-boss', password: 'password-1' })).teamId;
  malTmb = (await createUser(t, { username: 'cp-mal', password: 'password-1', teamId, role: 'member', permission: 6 })).tmbId;
  boss = await login(t, 'cp-boss', 'password-1');
  mal = await login(t, 'cp-mal', 'password-1');
});
afterAll(() => t.close());

describe('creating an app, by any route', () => {
  it('needs team write and write on the folder, also from an app one owns', async () => {
    const folder = await createFolder(t, boss, 'boss folder');
    await ok(t, boss, 'POST', '/core/app/collaborator/update', { appId: folder, tmbIds: [malTmb], permission: 6 });
    const own = await createApp(t, mal, { name: 'mal simple', parentId: folder });
    // The boss makes the app stop inheriting (Mallory still owns it), then takes her write on the folder and the team away.
    await ok(t, boss, 'POST', '/core/app/update', { appId: own, defaultPermission: 4 });
    await ok(t, boss, 'POST', '/core/app/collaborator/update', { appId: folder, tmbIds: [malTmb], permission: 4 });
    await addMember(t, { teamId, username: 'cp-mal', role: 'member', permission: 4 });
    mal = await login(t, 'cp-mal', 'password-1');
    const apps = t.app.mongo.db.collection('apps');
    const before = await apps.countDocuments({});

    for (const [url, body] of [
      ['/core/app/copy', { appId: own }],
      ['/core/app/create', { type: 'simple', modules: [], edges: [], name: 'x', parentId: folder }],
      ['/core/app/folder/create', { name: 'f', parentId: folder }],
      ['/core/app/httpPlugin/create', { name: 'h', parentId: folder, pluginData: {} }],
      ['/core/app/transitionWorkflow', { appId: own, createNew: true }],
    ] as const) {
      const answer = await call(t, mal, 'POST', url, body);
      expect(answer.status, `${url}: ${JSON.stringify(answer.body)}`).toBe(403);
    }
    expect(await apps.countDocuments({})).toBe(before);
    // Turning her own app into a workflow in place makes nothing new: still hers to do.
    expect(await ok(t, mal, 'POST', '/core/app/transitionWorkflow', { appId: own })).toEqual({});
  });
});
