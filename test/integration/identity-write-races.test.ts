/**
 * Identity writes that raced or left cached state behind: a password change against a reset or
 * another change, a timezone change against the cached auth context, a role change against a
 * team permission row, an API key update against its delete.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPlatformCommand } from '../../src/cli/platform-commands.js';
import { buildReplica, buildTestApp, type TestApp } from '../helpers/app.js';
import { apiKeyHeaders, authHeaders, createApiKey, createUser, login, whoami, whoamiProbe } from '../helpers/platform.js';

let t: TestApp;
let replica: TestApp;
beforeAll(async () => {
  t = await buildTestApp({}, whoamiProbe);
  replica = await buildReplica(t, {}, whoamiProbe);
});
afterAll(async () => {
  await replica.close();
  await t.close();
});

const cli = (...args: string[]) => runPlatformCommand(args, { config: t.config, db: t.app.mongo.db });
const loginStatus = async (username: string, password: string) =>
  (await t.app.inject({ method: 'POST', url: '/api/support/user/account/loginByPassword', payload: { username, password } })).statusCode;
const changePassword = (token: string, oldPsw: string, newPsw: string) =>
  t.app.inject({ method: 'POST', url: '/api/support/user/account/updatePasswordByOld', headers: authHeaders(token), payload: { oldPsw, newPsw } });
const tokenLogin = (token: string) => t.app.inject({ method: 'GET', url: '/api/support/user/account/tokenLogin', headers: authHeaders(token) });

/** Runs `meanwhile` once, inside the next password write, before that write reaches the database. */
function beforeNextPasswordWrite(meanwhile: () => Promise<unknown>): { restore(): void; ran(): boolean } {
  const users = t.app.identity.users;
  const original = users.setPassword;
  let ran = false;
  users.setPassword = async (...args: Parameters<typeof original>) => {
    if (!ran) {
      ran = true;
      await meanwhile();
    }
    return original(...args);
  };
  return { restore: () => (users.setPassword = original), ran: () => ran };
}

describe('password change racing another password write', () => {
  it('an admin reset after the old-password check stands; the change answers 409 and writes nothing', async () => {
    await createUser(t, { username: 'race-reset', password: 'old-pass-1' });
    const token = await login(t, 'race-reset', 'old-pass-1');
    const hook = beforeNextPasswordWrite(() => cli('user', 'reset-password', '--username', 'race-reset', '--password', 'admin-reset-1'));
    const changed = await changePassword(token, 'old-pass-1', 'changer-pass-1').finally(() => hook.restore());
    expect(hook.ran()).toBe(true);
    expect(changed.statusCode).toBe(409);
    expect(changed.json().message).toMatch(/changed or reset/);
    expect(await loginStatus('race-reset', 'admin-reset-1')).toBe(200);
    expect(await loginStatus('race-reset', 'changer-pass-1')).toBe(401);
    expect((await tokenLogin(token)).statusCode).toBe(401);
  });

  it('of two changes that checked the same old password, only the first is written', async () => {
    const { userId } = await createUser(t, { username: 'race-change', password: 'old-pass-2' });
    const token = await login(t, 'race-change', 'old-pass-2');
    // The other change is already past its auth check (the outer one ends its session first).
    const hook = beforeNextPasswordWrite(() => t.app.identity.sessions.changePassword({ userId, oldPsw: 'old-pass-2', newPsw: 'first-pass-2' }));
    const outer = await changePassword(token, 'old-pass-2', 'second-pass-2').finally(() => hook.restore());
    expect(hook.ran()).toBe(true);
    expect(outer.statusCode).toBe(409);
    expect(await loginStatus('race-change', 'first-pass-2')).toBe(200);
    expect(await loginStatus('race-change', 'second-pass-2')).toBe(401);
  });

  it('a change with nothing in between still works and keeps its own session', async () => {
    await createUser(t, { username: 'plain-change', password: 'old-pass-3' });
    const token = await login(t, 'plain-change', 'old-pass-3');
    expect((await changePassword(token, 'old-pass-3', 'new-pass-3')).statusCode).toBe(200);
    expect((await tokenLogin(token)).statusCode).toBe(200);
    expect(await loginStatus('plain-change', 'new-pass-3')).toBe(200);
  });
});

describe('timezone change and the cached auth context', () => {
  it('the next request of a session or API key sees the new timezone, on any replica', async () => {
    await createUser(t, { username: 'tz-change', password: 'tz-pass-1' });
    const token = await login(t, 'tz-change', 'tz-pass-1');
    const key = await createApiKey(t, token);
    for (const app of [t, replica]) {
      for (const headers of [authHeaders(token), apiKeyHeaders(key)]) expect((await whoami(app, headers)).json().data.timezone).toBe('Asia/Shanghai');
    }
    const updated = await t.app.inject({ method: 'PUT', url: '/api/support/user/account/update', headers: authHeaders(token), payload: { timezone: 'Europe/Paris' } });
    expect(updated.statusCode).toBe(200);
    for (const app of [t, replica]) {
      for (const headers of [authHeaders(token), apiKeyHeaders(key)]) expect((await whoami(app, headers)).json().data.timezone).toBe('Europe/Paris');
    }
  });
});

describe('team add-member changing the role of an existing member', () => {
  const permissionOf = async (token: string) => (await tokenLogin(token)).json().data.permission.value as number;

  it('a demoted admin with a permission row of 7 loses manage rights; a promoted member gets 7', async () => {
    const owner = await createUser(t, { username: 'role-owner', password: 'role-pass-1' });
    await createUser(t, { username: 'role-admin', password: 'role-pass-2', teamId: owner.teamId, role: 'admin', permission: 7 });
    await createUser(t, { username: 'role-member', password: 'role-pass-3', teamId: owner.teamId, role: 'member', permission: 4 });
    const admin = await login(t, 'role-admin', 'role-pass-2');
    const member = await login(t, 'role-member', 'role-pass-3');

    await cli('team', 'add-member', '--team', owner.teamId, '--username', 'role-admin', '--role', 'member');
    expect(await permissionOf(admin)).toBe(4);
    const renamed = await t.app.inject({ method: 'PUT', url: '/api/support/user/team/update', headers: authHeaders(admin), payload: { name: 'renamed' } });
    expect(renamed.statusCode).toBe(403);

    await cli('team', 'add-member', '--team', owner.teamId, '--username', 'role-member', '--role', 'admin');
    expect(await permissionOf(member)).toBe(7);
  });

  it('an explicit --permission with the role change, or the same role again, keeps the row', async () => {
    const owner = await createUser(t, { username: 'row-owner', password: 'row-pass-1' });
    await createUser(t, { username: 'row-member', password: 'row-pass-2', teamId: owner.teamId, role: 'member', permission: 6 });
    const member = await login(t, 'row-member', 'row-pass-2');
    await cli('team', 'add-member', '--team', owner.teamId, '--username', 'row-member', '--role', 'member');
    expect(await permissionOf(member)).toBe(6);
    await cli('team', 'add-member', '--team', owner.teamId, '--username', 'row-member', '--role', 'admin', '--permission', '4');
    expect(await permissionOf(member)).toBe(4);
  });
});

describe('API key update racing its delete', () => {
  it('answers 404 openapiUnExist and writes nothing', async () => {
    await createUser(t, { username: 'key-race', password: 'key-pass-1' });
    const token = await login(t, 'key-race', 'key-pass-1');
    await createApiKey(t, token, { name: 'racer' });
    const list = await t.app.inject({ method: 'GET', url: '/api/support/openapi/list', headers: authHeaders(token) });
    const id = (list.json().data as { _id: string; name: string }[]).find((k) => k.name === 'racer')!._id;
    const keys = t.app.identity.apiKeys;
    const original = keys.findInTeam;
    keys.findInTeam = async (...args: Parameters<typeof original>) => {
      const found = await original(...args);
      await keys.delete(id, found!.teamId);
      return found;
    };
    const updated = await t.app
      .inject({ method: 'POST', url: '/api/support/openapi/update', headers: authHeaders(token), payload: { _id: id, name: 'renamed' } })
      .finally(() => (keys.findInTeam = original));
    expect(updated.statusCode).toBe(404);
    expect(updated.json().statusText).toBe('openapiUnExist');
    expect(await t.app.mongo.db.collection('openapis').countDocuments({ name: { $in: ['racer', 'renamed'] } })).toBe(0);
  });
});
