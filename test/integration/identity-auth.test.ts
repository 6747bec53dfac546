import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyPassword } from '../../src/infra/password-hash.js';
import { signSessionToken } from '../../src/platform/identity/session-token.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';

let t: TestApp;

beforeAll(async () => {
  t = await buildTestApp();
});

afterAll(async () => {
  await t.close();
});

const tokenLogin = (headers: Record<string, string>) => t.app.inject({ method: 'GET', url: '/api/support/user/account/tokenLogin', headers });

describe('login and sessions', () => {
  it('creates root at start-up with DEFAULT_ROOT_PSW and logs it in, setting the cookie', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/support/user/account/loginByPassword',
      payload: { username: 'root', password: 'root-password-1' },
    });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body).toMatchObject({ code: 200, statusText: '', message: '' });
    expect(body.data.user).toMatchObject({ username: 'root', team: { role: 'owner', teamName: 'My Team', permission: { isOwner: true } } });
    expect(body.data.user.password).toBeUndefined();
    expect(typeof body.data.token).toBe('string');
    const cookie = String(response.headers['set-cookie']);
    expect(cookie).toContain(`fastgpt_token=${body.data.token}`);
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    // The cookie alone authenticates.
    const me = await t.app.inject({ method: 'GET', url: '/api/support/user/account/tokenLogin', cookies: { fastgpt_token: body.data.token } });
    expect(me.statusCode).toBe(200);
    expect(me.json().data.username).toBe('root');
  });

  it('resets the root password from DEFAULT_ROOT_PSW at the next start, ending root sessions', async () => {
    const token = await login(t, 'root', 'root-password-1');
    const changed = await t.app.inject({
      method: 'POST',
      url: '/api/support/user/account/updatePasswordByOld',
      headers: authHeaders(token),
      payload: { oldPsw: 'root-password-1', newPsw: 'changed-by-hand' },
    });
    expect(changed.statusCode).toBe(200);
    const restarted = await buildTestApp({ MONGODB_URI: t.config.MONGODB_URI });
    try {
      expect((await restarted.app.inject({ method: 'GET', url: '/api/support/user/account/tokenLogin', headers: authHeaders(token) })).statusCode).toBe(401);
      expect(await login(restarted, 'root', 'root-password-1')).toBeTruthy();
      expect(await restarted.app.mongo.db.collection('users').countDocuments({ username: 'root' })).toBe(1);
    } finally {
      await restarted.app.close();
    }
  });

  it('without DEFAULT_ROOT_PSW, root gets a random password that no log line holds', async () => {
    const fresh = await buildTestApp({ DEFAULT_ROOT_PSW: '' });
    try {
      const root = await fresh.app.mongo.db.collection('users').findOne({ username: 'root' });
      expect(root?.password).toBeTruthy();
      const logs = fresh.logs();
      expect(logs).toContain('created the root user with a random password that is not shown');
      // Every text value written to the log, tried as root's password: none is.
      const values = logs.split('\n').filter(Boolean).flatMap((line) => Object.values(JSON.parse(line) as Record<string, unknown>));
      const candidates = [...new Set(values.filter((value): value is string => typeof value === 'string' && /^[\w-]{8,40}$/.test(value)))];
      for (const candidate of candidates) expect(await verifyPassword(candidate, root!.password as string), candidate).toBe(false);
    } finally {
      await fresh.close();
    }
  });

  it('accepts the sha256 hex form of the password as the reference web client sends it', async () => {
    const { createHash } = await import('node:crypto');
    const hashed = createHash('sha256').update('root-password-1').digest('hex');
    expect(await login(t, 'root', hashed)).toBeTruthy();
  });

  it('logs in a created user and answers tokenLogin with the user detail', async () => {
    const ids = await createUser(t, { username: 'alice', password: 'alice-pass-1' });
    const token = await login(t, 'alice', 'alice-pass-1');
    const response = await tokenLogin(authHeaders(token));
    expect(response.statusCode).toBe(200);
    expect(response.json().data).toMatchObject({
      _id: ids.userId,
      username: 'alice',
      team: { teamId: ids.teamId, tmbId: ids.tmbId, userId: ids.userId, role: 'owner', defaultTeam: true, status: 'active' },
      permission: { value: 4294967295, isOwner: true, hasManagePer: true },
    });
  });

  it('refuses a wrong password and an unknown user the same way', async () => {
    const wrong = await t.app.inject({ method: 'POST', url: '/api/support/user/account/loginByPassword', payload: { username: 'alice', password: 'nope-nope' } });
    const unknown = await t.app.inject({ method: 'POST', url: '/api/support/user/account/loginByPassword', payload: { username: 'nobody', password: 'nope-nope' } });
    expect(wrong.statusCode).toBe(401);
    expect(unknown.statusCode).toBe(401);
    expect(wrong.json()).toEqual(unknown.json());
    expect(wrong.json()).toMatchObject({ statusText: 'unAuthUser', data: null });
    expect(wrong.headers['set-cookie']).toBeUndefined();
  });

  it('refuses missing fields with a 400 naming the field', async () => {
    const response = await t.app.inject({ method: 'POST', url: '/api/support/user/account/loginByPassword', payload: { username: 'alice' } });
    expect(response.statusCode).toBe(400);
    expect(response.json().message).toContain('password');
  });

  it('refuses no token, a garbage token, a token signed with another key and an expired token', async () => {
    const ids = await createUser(t, { username: 'bob', password: 'bob-pass-1' });
    const none = await tokenLogin({});
    expect(none.statusCode).toBe(401);
    expect(none.json()).toMatchObject({ code: 403, statusText: 'unAuthorization' });
    expect((await tokenLogin({ token: 'garbage' })).statusCode).toBe(401);
    const claims = { userId: ids.userId, teamId: ids.teamId, tmbId: ids.tmbId, isRoot: false, sid: new ObjectId().toHexString() };
    const foreign = signSessionToken(claims, 'another-key-0123456789abcdef', Date.now());
    expect((await tokenLogin({ token: foreign })).statusCode).toBe(401);
    // A real session, re-signed with a past expiry.
    const token = await login(t, 'bob', 'bob-pass-1');
    const sid = JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString()).sid as string;
    const past = Math.floor(Date.now() / 1000) - 3600;
    const expired = signSessionToken({ ...claims, sid, iat: past - 100, exp: past }, t.config.TOKEN_KEY, (past - 100) * 1000);
    const refused = await tokenLogin({ token: expired });
    expect(refused.statusCode).toBe(401);
    expect(String(refused.headers['set-cookie'])).toContain('fastgpt_token=;');
    expect((await tokenLogin({ token })).statusCode).toBe(200);
  });

  it('refuses a token after loginout, and one of a deleted user', async () => {
    await createUser(t, { username: 'carol', password: 'carol-pass-1' });
    const token = await login(t, 'carol', 'carol-pass-1');
    const other = await login(t, 'carol', 'carol-pass-1');
    const out = await t.app.inject({ method: 'GET', url: '/api/support/user/account/loginout', headers: authHeaders(token) });
    expect(out.statusCode).toBe(200);
    expect(out.json().data).toBeNull();
    expect(String(out.headers['set-cookie'])).toMatch(/fastgpt_token=;/);
    expect((await tokenLogin(authHeaders(token))).statusCode).toBe(401);
    expect((await tokenLogin(authHeaders(other))).statusCode).toBe(200);
    await t.app.mongo.db.collection('users').deleteOne({ username: 'carol' });
    expect((await tokenLogin(authHeaders(other))).statusCode).toBe(401);
  });

  it('loginout ends the session of a disabled user or a departed member: it does not come back with the account', async () => {
    const users = t.app.mongo.db.collection('users');
    const members = t.app.mongo.db.collection('team_members');
    await createUser(t, { username: 'dora', password: 'dora-pass-1' });
    const departed = await createUser(t, { username: 'dean', password: 'dean-pass-1' });
    const cases = [
      { token: await login(t, 'dora', 'dora-pass-1'), suspend: () => users.updateOne({ username: 'dora' }, { $set: { status: 'forbidden' } }), restore: () => users.updateOne({ username: 'dora' }, { $set: { status: 'active' } }) },
      { token: await login(t, 'dean', 'dean-pass-1'), suspend: () => members.updateOne({ _id: new ObjectId(departed.tmbId) }, { $set: { status: 'leave' } }), restore: () => members.updateOne({ _id: new ObjectId(departed.tmbId) }, { $set: { status: 'active' } }) },
    ];
    const now = t.app.identity.clock.now;
    try {
      for (const [i, { token, suspend, restore }] of cases.entries()) {
        expect((await tokenLogin(authHeaders(token))).statusCode).toBe(200);
        await suspend();
        // Past the credential cache's age: the session is refused while suspended.
        t.app.identity.clock.now = () => now() + (2 * i + 1) * 61_000;
        expect((await tokenLogin(authHeaders(token))).statusCode).toBe(401);
        const out = await t.app.inject({ method: 'POST', url: '/api/support/user/account/loginout', headers: authHeaders(token) });
        expect(out.statusCode).toBe(200);
        expect(String(out.headers['set-cookie'])).toMatch(/fastgpt_token=;/);
        await restore();
        t.app.identity.clock.now = () => now() + (2 * i + 2) * 61_000;
        expect((await tokenLogin(authHeaders(token))).statusCode).toBe(401);
      }
    } finally {
      t.app.identity.clock.now = now;
    }
  });

  it('loginout with a token that is not well signed ends nothing and still clears the cookie', async () => {
    await createUser(t, { username: 'fern', password: 'fern-pass-1' });
    const token = await login(t, 'fern', 'fern-pass-1');
    const [head, payload] = token.split('.');
    const out = await t.app.inject({ method: 'GET', url: '/api/support/user/account/loginout', headers: { token: `${head}.${payload}.forged` } });
    expect(out.statusCode).toBe(200);
    expect(String(out.headers['set-cookie'])).toMatch(/fastgpt_token=;/);
    expect((await tokenLogin(authHeaders(token))).statusCode).toBe(200);
  });

  it('accepts the root key header where a route allows it, constant value only', async () => {
    const request = { headers: { rootkey: t.config.ROOT_KEY } } as never;
    const context = await t.app.platformAuth.authenticate(request, ['rootKey']);
    expect(context).toMatchObject({ authType: 'root', isRoot: true });
    await expect(t.app.platformAuth.authenticate({ headers: { rootkey: 'wrong' } } as never, ['rootKey'])).rejects.toMatchObject({ statusText: 'unAuthorization' });
    await expect(t.app.platformAuth.authenticate(request, ['session'])).rejects.toMatchObject({ httpStatus: 401 });
  });
});
