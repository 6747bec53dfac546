import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { bearer, cli, login, postToken } from '../fixtures/cluster/helpers.js';

const CLIENT = { client_id: 'kubesphere', client_secret: 'kubesphere' };
const NODES = '/kapis/resources.platform.io/v1alpha3/nodes';
const MINUTE = 60_000;

describe('blocking after 10 failed logins in 10 minutes (movable clock)', () => {
  let t: TestApp;
  const attempt = (password: string) => postToken(t.app, { ...CLIENT, grant_type: 'password', username: 'bob', password });

  beforeAll(async () => {
    t = await buildTestApp();
    await cli(t.app, ['user', 'add', '--username', 'bob', '--email', 'bob@example.com', '--password', 'Bob-pass12']);
    await cli(t.app, ['user', 'add', '--username', 'carol', '--email', 'carol@example.com', '--password', 'Carol-pass1']);
  });
  afterAll(async () => {
    await t.close();
  });

  it('failures older than the window do not count', async () => {
    for (let index = 0; index < 9; index++) expect((await attempt('wrong')).statusCode).toBe(400);
    t.app.cluster.clock.advance(11 * MINUTE);
    expect((await attempt('wrong')).statusCode).toBe(400);
    expect((await attempt('Bob-pass12')).statusCode).toBe(200);
  });

  it('the 10th failure blocks: 429 even with the right password, no record written, existing tokens keep working', async () => {
    t.app.cluster.clock.advance(11 * MINUTE);
    const before = await login(t.app, 'bob', 'Bob-pass12');
    for (let index = 0; index < 10; index++) {
      expect((await attempt('wrong')).json()).toEqual({ error: 'invalid_grant', error_description: 'incorrect password' });
    }
    const blocked = await attempt('Bob-pass12');
    expect(blocked.statusCode).toBe(429);
    expect(blocked.json()).toEqual({ error: 'invalid_grant', error_description: 'auth rate limit exceeded' });
    expect((await attempt('wrong')).statusCode).toBe(429);
    const account = await t.app.mongo.db.collection('cluster_users').findOne({ _id: 'bob' as never });
    expect(account).toMatchObject({ state: 'AuthLimitExceeded', reason: 'Failed login attempts exceed 10 in last 10m0s' });
    const count = await t.app.mongo.db.collection('cluster_login_records').countDocuments({ username: 'bob' });
    await attempt('Bob-pass12');
    expect(await t.app.mongo.db.collection('cluster_login_records').countDocuments({ username: 'bob' })).toBe(count);
    expect((await t.app.inject({ method: 'GET', url: NODES, headers: bearer(before.access_token) })).statusCode).toBe(200);
    // Other accounts are not affected.
    expect((await postToken(t.app, { ...CLIENT, grant_type: 'password', username: 'carol', password: 'Carol-pass1' })).statusCode).toBe(200);
  });

  it('stays blocked for 10 minutes, then recovers with a clean slate', async () => {
    t.app.cluster.clock.advance(9 * MINUTE);
    expect((await attempt('Bob-pass12')).statusCode).toBe(429);
    t.app.cluster.clock.advance(1 * MINUTE + 1000);
    expect((await attempt('Bob-pass12')).statusCode).toBe(200);
    // Failures from before the recovery no longer count: one more failure does not block again.
    expect((await attempt('wrong')).statusCode).toBe(400);
    expect((await attempt('Bob-pass12')).statusCode).toBe(200);
    const account = await t.app.mongo.db.collection('cluster_users').findOne({ _id: 'bob' as never });
    expect(account?.state).toBe('Active');
  });
});

describe('CLUSTER_MULTIPLE_LOGIN=false', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp({ CLUSTER_MULTIPLE_LOGIN: 'false' });
    await cli(t.app, ['user', 'add', '--username', 'erin', '--email', 'erin@example.com', '--password', 'Erin-pass1']);
  });
  afterAll(async () => {
    await t.close();
  });

  it('a new login revokes the older sessions', async () => {
    const first = await login(t.app, 'erin', 'Erin-pass1');
    t.app.cluster.clock.advance(1000);
    const second = await login(t.app, 'erin', 'Erin-pass1');
    const old = await t.app.inject({ method: 'GET', url: NODES, headers: bearer(first.access_token) });
    expect(old.statusCode).toBe(401);
    expect(old.json().message).toBe('Unauthorized: token not found in cache');
    expect((await t.app.inject({ method: 'GET', url: NODES, headers: bearer(second.access_token) })).statusCode).toBe(200);
  });

  // The same claims in the same second: both grants sign the very same new pair. The first runs
  // whole (revoking the refresh token, keeping the pair) while the second is about to store the
  // pair, or has stored it and is about to check the refresh token; the second then finds the
  // refresh token gone and takes back what it stored, which must not be the first one's answer.
  for (const stallAt of ['issuePair', 'requireAllowed'] as const) {
    it(`two refreshes of one refresh token within one second (the first runs before the second's ${stallAt}): the first's pair stays valid`, async () => {
      const pair = await login(t.app, 'erin', 'Erin-pass1');
      // Both grants within one second for sure: the clock stands still while they run.
      const clock = t.app.cluster.clock;
      const at = new Date(clock.now().getTime() + 1000);
      clock.now = () => at;
      const refresh = () => postToken(t.app, { ...CLIENT, grant_type: 'refresh_token', refresh_token: pair.refresh_token });
      const tokens = t.app.cluster.tokens as unknown as Record<typeof stallAt, (...args: unknown[]) => Promise<unknown>>;
      const original = tokens[stallAt];
      let first: Awaited<ReturnType<typeof refresh>> | undefined;
      let started = false;
      tokens[stallAt] = async (...args: unknown[]) => {
        if (!started) {
          started = true;
          first = await refresh();
        }
        return original(...args);
      };
      let second: Awaited<ReturnType<typeof refresh>>;
      try {
        second = await refresh();
      } finally {
        tokens[stallAt] = original;
        delete (clock as Partial<typeof clock>).now;
      }
      expect(first?.statusCode, first?.body).toBe(200);
      expect(second.json()).toEqual({ error: 'invalid_grant', error_description: 'token not found in cache' });
      const handedOut = first!.json();
      expect((await t.app.inject({ method: 'GET', url: NODES, headers: bearer(handedOut.access_token) })).statusCode).toBe(200);
      t.app.cluster.clock.advance(2000);
      expect((await postToken(t.app, { ...CLIENT, grant_type: 'refresh_token', refresh_token: handedOut.refresh_token })).statusCode).toBe(200);
    });
  }

  it('a refresh revokes every earlier token, including the refresh token used', async () => {
    const pair = await login(t.app, 'erin', 'Erin-pass1');
    t.app.cluster.clock.advance(1000);
    const refreshed = await postToken(t.app, { ...CLIENT, grant_type: 'refresh_token', refresh_token: pair.refresh_token });
    expect(refreshed.statusCode).toBe(200);
    expect((await t.app.inject({ method: 'GET', url: NODES, headers: bearer(pair.access_token) })).statusCode).toBe(401);
    const reuse = await postToken(t.app, { ...CLIENT, grant_type: 'refresh_token', refresh_token: pair.refresh_token });
    expect(reuse.json()).toEqual({ error: 'invalid_grant', error_description: 'token not found in cache' });
    expect((await t.app.inject({ method: 'GET', url: NODES, headers: bearer(refreshed.json().access_token) })).statusCode).toBe(200);
  });
});
