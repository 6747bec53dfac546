import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPlatformCommand } from '../../src/cli/platform-commands.js';
import type { TokenPair } from '../../src/cluster/oauth/tokens.service.js';
import { buildReplica, buildTestApp, type TestApp } from '../helpers/app.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { bearer, cli, login as clusterLogin, postToken } from '../fixtures/cluster/helpers.js';

/**
 * A login that checked the old password while the password was reset (or the account disabled)
 * must not leave a credential behind. Each test runs the revoking write exactly between the
 * login's password check and the write of its credential, by wrapping the repository or service
 * method the login calls there; two processes (two apps on one database) where it matters.
 */
let a: TestApp;
let b: TestApp;

beforeAll(async () => {
  a = await buildTestApp();
  b = await buildReplica(a);
});

afterAll(async () => {
  // The database is shared: only the first drops it.
  await b.close();
  await a.close();
});

/** Replaces `object[name]` until its first call that `matches`; that call runs `between` first. */
function runOnceBefore<T extends object, K extends keyof T>(object: T, name: K, matches: (...args: never[]) => boolean, between: () => Promise<unknown>) {
  const original = object[name] as (...args: unknown[]) => Promise<unknown>;
  const state = { ran: false };
  object[name] = (async (...args: never[]) => {
    if (!state.ran && matches(...args)) {
      state.ran = true;
      object[name] = original as T[K];
      await between();
    }
    return original(...args);
  }) as T[K];
  const restore = () => {
    object[name] = original as T[K];
  };
  return { state, restore };
}

describe('platform: a login racing a password reset or change', () => {
  const PASSWORD = 'race-pass-1';
  let counter = 0;
  const loginRequest = (t: TestApp, username: string, password: string) =>
    t.app.inject({ method: 'POST', url: '/api/support/user/account/loginByPassword', payload: { username, password } });
  const sessionCount = (userId: string) => a.app.mongo.db.collection('user_sessions').countDocuments({ userId: new ObjectId(userId) });
  const tokenLogin = (t: TestApp, token: string) => t.app.inject({ method: 'GET', url: '/api/support/user/account/tokenLogin', headers: authHeaders(token) });

  async function newUser() {
    const username = `race-${++counter}`;
    return { ...(await createUser(a, { username, password: PASSWORD })), username };
  }

  /** The login resolves its team member after the password check and before storing the session. */
  const betweenCheckAndSession = (t: TestApp, tmbId: string, between: () => Promise<unknown>) =>
    runOnceBefore(t.app.identity.teams, 'findMember', ((id: string) => id === tmbId) as never, between);

  it('an admin reset during the login: the login is refused and leaves no session', async () => {
    const user = await newUser();
    const hook = betweenCheckAndSession(a, user.tmbId, () =>
      runPlatformCommand(['user', 'reset-password', '--username', user.username, '--password', 'race-pass-2'], { config: a.config, db: a.app.mongo.db }),
    );
    const response = await loginRequest(a, user.username, PASSWORD);
    hook.restore();
    expect(hook.state.ran).toBe(true);
    expect(response.statusCode, response.body).toBe(401);
    expect(response.json()).toMatchObject({ code: 503000, message: 'Invalid username or password' });
    expect(response.headers['set-cookie']).toBeUndefined();
    expect(await sessionCount(user.userId)).toBe(0);
    expect((await loginRequest(a, user.username, PASSWORD)).statusCode).toBe(401);
    await login(a, user.username, 'race-pass-2');
  });

  it('a password change on another process during the login: refused, the changer keeps its session', async () => {
    const user = await newUser();
    const owner = await login(b, user.username, PASSWORD);
    const hook = betweenCheckAndSession(a, user.tmbId, async () => {
      const changed = await b.app.inject({ method: 'POST', url: '/api/support/user/account/updatePasswordByOld', headers: authHeaders(owner), payload: { oldPsw: PASSWORD, newPsw: 'race-pass-3' } });
      expect(changed.statusCode, changed.body).toBe(200);
    });
    const response = await loginRequest(a, user.username, PASSWORD);
    hook.restore();
    expect(hook.state.ran).toBe(true);
    expect(response.statusCode, response.body).toBe(401);
    expect(await sessionCount(user.userId)).toBe(1);
    expect((await tokenLogin(a, owner)).statusCode).toBe(200);
  });

  it('a password change stopped before its write has already ended the other sessions', async () => {
    const user = await newUser();
    const changer = await login(a, user.username, PASSWORD);
    const other = await login(b, user.username, PASSWORD);
    const users = a.app.identity.users;
    const setPassword = users.setPassword;
    users.setPassword = async () => {
      throw new Error('process stopped before the password was written');
    };
    try {
      const changed = await a.app.inject({ method: 'POST', url: '/api/support/user/account/updatePasswordByOld', headers: authHeaders(changer), payload: { oldPsw: PASSWORD, newPsw: 'race-pass-4' } });
      expect(changed.statusCode).toBe(500);
    } finally {
      users.setPassword = setPassword;
    }
    expect((await tokenLogin(b, other)).statusCode).toBe(401);
    expect((await tokenLogin(a, changer)).statusCode).toBe(200);
    // The change did not happen: the old password still opens a session.
    await login(a, user.username, PASSWORD);
  });

  it('without a race the login is unchanged (one session, usable at once)', async () => {
    const user = await newUser();
    const token = await login(a, user.username, PASSWORD);
    expect(await sessionCount(user.userId)).toBe(1);
    expect((await tokenLogin(b, token)).statusCode).toBe(200);
  });
});

describe('cluster: a token grant racing a password reset or a disable', () => {
  const CLIENT = { client_id: 'kubesphere', client_secret: 'kubesphere' };
  const NODES = '/kapis/resources.kubesphere.io/v1alpha3/nodes';
  let counter = 0;

  async function newAccount() {
    const username = `racer-${++counter}`;
    await cli(a.app, ['user', 'add', '--username', username, '--email', `${username}@example.com`, '--password', 'Race-pass1']);
    return username;
  }

  /** Both grants check first (password, or the refresh token), then store the new pair with issuePair. */
  const betweenCheckAndTokens = (username: string, between: () => Promise<unknown>) =>
    runOnceBefore(a.app.cluster.tokens, 'issuePair', ((name: string) => name === username) as never, between);

  const passwordGrant = (username: string, password: string) => postToken(a.app, { ...CLIENT, grant_type: 'password', username, password });
  const tokenCount = (username: string) => a.app.cluster.tokens.countForUser(username);

  it('a reset (admin CLI) during a password grant: refused as a wrong password, no token left', async () => {
    const username = await newAccount();
    const hook = betweenCheckAndTokens(username, () => cli(a.app, ['user', 'reset-password', '--username', username, '--password', 'Race-pass2']));
    const response = await passwordGrant(username, 'Race-pass1');
    hook.restore();
    expect(hook.state.ran).toBe(true);
    expect(response.statusCode, response.body).toBe(400);
    expect(response.json()).toEqual({ error: 'invalid_grant', error_description: 'incorrect password' });
    expect(await tokenCount(username)).toBe(0);
    await clusterLogin(a.app, username, 'Race-pass2');
  });

  it('a disable during a password grant: refused as a disabled account, no token left', async () => {
    const username = await newAccount();
    const hook = betweenCheckAndTokens(username, () => cli(a.app, ['user', 'disable', username]));
    const response = await passwordGrant(username, 'Race-pass1');
    hook.restore();
    expect(hook.state.ran).toBe(true);
    expect(response.statusCode, response.body).toBe(400);
    expect(response.json()).toEqual({ error: 'invalid_grant', error_description: 'account is not active' });
    expect(await tokenCount(username)).toBe(0);
  });

  it('a reset during a refresh grant: refused, no token left (the new pair does not outlive the reset)', async () => {
    const username = await newAccount();
    const pair: TokenPair = (await passwordGrant(username, 'Race-pass1')).json();
    a.app.cluster.clock.advance(2000);
    const hook = betweenCheckAndTokens(username, () => cli(a.app, ['user', 'reset-password', '--username', username, '--password', 'Race-pass3']));
    const response = await postToken(a.app, { ...CLIENT, grant_type: 'refresh_token', refresh_token: pair.refresh_token });
    hook.restore();
    expect(hook.state.ran).toBe(true);
    expect(response.statusCode, response.body).toBe(400);
    expect(response.json()).toEqual({ error: 'invalid_grant', error_description: 'token not found in cache' });
    expect(await tokenCount(username)).toBe(0);
  });

  it('a logout on another process during a refresh grant: the new pair is gone too', async () => {
    const username = await newAccount();
    const pair: TokenPair = (await passwordGrant(username, 'Race-pass1')).json();
    a.app.cluster.clock.advance(2000);
    const hook = betweenCheckAndTokens(username, async () => {
      expect((await b.app.inject({ method: 'GET', url: '/oauth/logout', headers: bearer(pair.access_token) })).statusCode).toBe(200);
    });
    const response = await postToken(a.app, { ...CLIENT, grant_type: 'refresh_token', refresh_token: pair.refresh_token });
    hook.restore();
    expect(hook.state.ran).toBe(true);
    expect(response.statusCode, response.body).toBe(400);
    expect(await tokenCount(username)).toBe(0);
  });

  it('without a race both grants are unchanged', async () => {
    const username = await newAccount();
    const pair: TokenPair = (await passwordGrant(username, 'Race-pass1')).json();
    a.app.cluster.clock.advance(2000);
    const refreshed = await postToken(a.app, { ...CLIENT, grant_type: 'refresh_token', refresh_token: pair.refresh_token });
    expect(refreshed.statusCode, refreshed.body).toBe(200);
    expect((await a.app.inject({ method: 'GET', url: NODES, headers: bearer(refreshed.json().access_token) })).statusCode).toBe(200);
    expect(await tokenCount(username)).toBe(4);
  });
});
