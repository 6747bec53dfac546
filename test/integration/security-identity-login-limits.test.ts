import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { createAttemptLimiter } from '../../src/infra/attempt-limiter.js';
import { buildTestApp, type TestApp, testConfig } from '../helpers/app.js';
import { createUser } from '../helpers/platform.js';
import { cli, postToken } from '../fixtures/cluster/helpers.js';

/**
 * Login limits under parallel guessing (security review item 7): the attempt is reserved in
 * MongoDB before the password check, so 60 parallel wrong passwords run at most 10 checks, and
 * every replica on the same database shares the counts.
 */
let t: TestApp;
const LOGIN = '/api/support/user/account/loginByPassword';
const CLIENT = { client_id: 'kubesphere', client_secret: 'kubesphere' };

const platformLogin = (app: TestApp['app'], username: string, password: string, remoteAddress = '127.0.0.1') =>
  app.inject({ method: 'POST', url: LOGIN, payload: { username, password }, remoteAddress });

function tally(statuses: number[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const status of statuses) counts[status] = (counts[status] ?? 0) + 1;
  return counts;
}

const WINDOW_MS = 10 * 60_000;
// Windows are aligned on the clock: the run happens a minute into one, so no test crosses a boundary.
const PINNED = (Math.floor(Date.now() / WINDOW_MS) + 1) * WINDOW_MS + 60_000;

function pinClocks(app: TestApp['app']): void {
  app.identity.clock.now = () => PINNED;
  app.cluster.clock.advance(PINNED - app.cluster.clock.now().getTime());
}

beforeAll(async () => {
  t = await buildTestApp();
  pinClocks(t.app);
});

afterAll(async () => {
  await t.close();
});

describe('platform login under 60 parallel wrong passwords', () => {
  it('checks at most 10 passwords for one account (each 401 is a check), refuses the rest with 429, and then the right password too', async () => {
    await createUser(t, { username: 'parallel-target', password: 'right-password' });
    const responses = await Promise.all(Array.from({ length: 60 }, (_, i) => platformLogin(t.app, 'parallel-target', `wrong-${i}`, `10.20.${i}.1`)));
    const counts = tally(responses.map((response) => response.statusCode));
    expect(Object.keys(counts).sort()).toEqual(['401', '429']);
    expect(counts[401]).toBeLessThanOrEqual(10);
    expect(counts[429]).toBeGreaterThanOrEqual(50);
    const refused = responses.find((response) => response.statusCode === 429);
    expect(refused?.json()).toMatchObject({ code: 429, statusText: 'tooManyRequest', data: null });
    expect(Number(refused?.headers['retry-after'])).toBeGreaterThan(0);
    const right = await platformLogin(t.app, 'parallel-target', 'right-password', '10.21.0.1');
    expect(right.statusCode).toBe(429);
  });

  it('checks at most 10 passwords from one IP address across accounts', async () => {
    const responses = await Promise.all(Array.from({ length: 60 }, (_, i) => platformLogin(t.app, `nobody-${i}`, 'wrong-password', '10.30.0.1')));
    const counts = tally(responses.map((response) => response.statusCode));
    expect(counts[401]).toBeLessThanOrEqual(10);
    expect(counts[429]).toBeGreaterThanOrEqual(50);
  });

  it('a success gives its IP reservation back and resets the account: logins keep working', async () => {
    await createUser(t, { username: 'frequent', password: 'right-password' });
    for (let i = 0; i < 15; i++) expect((await platformLogin(t.app, 'frequent', 'right-password', '10.40.0.1')).statusCode).toBe(200);
    for (let i = 0; i < 9; i++) expect((await platformLogin(t.app, 'frequent', 'wrong-password', '10.40.0.2')).statusCode).toBe(401);
    expect((await platformLogin(t.app, 'frequent', 'right-password', '10.40.0.2')).statusCode).toBe(200);
    // The account count was reset by the success; the IP still holds its 9 failures.
    expect((await platformLogin(t.app, 'frequent', 'wrong-password', '10.40.0.3')).statusCode).toBe(401);
    expect((await platformLogin(t.app, 'frequent', 'wrong-password', '10.40.0.2')).statusCode).toBe(401);
    expect((await platformLogin(t.app, 'frequent', 'right-password', '10.40.0.2')).statusCode).toBe(429);
  });

  it('the old-password check of a password change is limited per session (30 parallel guesses: at most 10 checks)', async () => {
    await createUser(t, { username: 'changer', password: 'right-password' });
    const token = (await platformLogin(t.app, 'changer', 'right-password', '10.50.0.1')).json().data.token as string;
    const change = (oldPsw: string) =>
      t.app.inject({ method: 'POST', url: '/api/support/user/account/updatePasswordByOld', headers: { token }, payload: { oldPsw, newPsw: 'new-password-1' } });
    const responses = await Promise.all(Array.from({ length: 30 }, (_, i) => change(`guess-${i}`)));
    const counts = tally(responses.map((response) => response.statusCode));
    expect(counts[403]).toBeLessThanOrEqual(10);
    expect(counts[429]).toBeGreaterThanOrEqual(20);
    expect((await change('right-password')).statusCode).toBe(429);
    // Old-password guesses are counted per session, apart from the login limit (which anyone can fill by name).
    expect((await platformLogin(t.app, 'changer', 'right-password', '10.50.0.2')).statusCode).toBe(200);
  });
});

describe('cluster password grant and HTTP Basic under 60 parallel wrong passwords', () => {
  beforeAll(async () => {
    await cli(t.app, ['user', 'add', '--username', 'ivy', '--email', 'ivy@example.com', '--password', 'Ivy-pass12']);
    await cli(t.app, ['user', 'add', '--username', 'jay', '--email', 'jay@example.com', '--password', 'Jay-pass12']);
  });

  it('verifies at most 10 passwords (one failure record each), answers the rest 429 and blocks the account', async () => {
    const grant = (password: string) => postToken(t.app, { ...CLIENT, grant_type: 'password', username: 'ivy', password });
    const responses = await Promise.all(Array.from({ length: 60 }, (_, i) => grant(`Wrong-pass${i}`)));
    const counts = tally(responses.map((response) => response.statusCode));
    expect(Object.keys(counts).sort()).toEqual(['400', '429']);
    const failureRecords = await t.app.mongo.db.collection('cluster_login_records').countDocuments({ username: 'ivy', success: false });
    expect(failureRecords).toBe(counts[400]);
    expect(failureRecords).toBeLessThanOrEqual(10);
    expect(responses.find((response) => response.statusCode === 429)?.json()).toEqual({ error: 'invalid_grant', error_description: 'auth rate limit exceeded' });
    const right = await grant('Ivy-pass12');
    expect(right.statusCode).toBe(429);
    const account = await t.app.mongo.db.collection('cluster_users').findOne({ _id: 'ivy' as never });
    expect(account?.state).toBe('AuthLimitExceeded');
  });

  it('an unknown name answers as a wrong password, and its guesses are limited by the client address', async () => {
    const grant = (password: string) =>
      t.app.inject({
        method: 'POST',
        url: '/oauth/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ ...CLIENT, grant_type: 'password', username: 'nobody-here', password }).toString(),
        remoteAddress: '10.60.0.1',
      });
    const responses = await Promise.all(Array.from({ length: 40 }, (_, i) => grant(`Wrong-pass${i}`)));
    const counts = tally(responses.map((response) => response.statusCode));
    // Same answer as a real account's wrong password (the decoy check makes it as slow, too); the
    // address's 30 slots bound the decoy checks, past them the answer waits as long without one;
    // the name itself is not stored.
    expect(counts).toEqual({ 400: 40 });
    expect(responses.every((response) => response.json().error_description === 'incorrect password')).toBe(true);
    expect(await t.app.mongo.db.collection('cluster_login_attempts').countDocuments({ key: 'ip:10.60.0.1' })).toBe(30);
    expect(await t.app.mongo.db.collection('cluster_login_attempts').countDocuments({ key: { $regex: 'nobody-here' } })).toBe(0);
  });

  it('HTTP Basic on /kapis: at most 10 checks, every refusal a 401 Status', async () => {
    const basic = (password: string) => ({ authorization: `Basic ${Buffer.from(`jay:${password}`).toString('base64')}` });
    const nodes = (password: string) => t.app.inject({ method: 'GET', url: '/kapis/resources.platform.io/v1alpha3/nodes', headers: basic(password) });
    const responses = await Promise.all(Array.from({ length: 60 }, (_, i) => nodes(`Wrong-pass${i}`)));
    expect(responses.every((response) => response.statusCode === 401 && response.json().kind === 'Status')).toBe(true);
    expect(await t.app.mongo.db.collection('cluster_login_records').countDocuments({ username: 'jay', success: false })).toBeLessThanOrEqual(10);
    const right = await nodes('Jay-pass12');
    expect(right.statusCode).toBe(401);
    expect(right.json().message).toBe('Unauthorized: auth rate limit exceeded');
  });
});

describe('replicas share the counts (two apps on one database)', () => {
  let replica: TestApp['app'];
  beforeAll(async () => {
    replica = await buildApp(testConfig({ MONGODB_URI: t.config.MONGODB_URI }), { startupTasks: false });
    await replica.ready();
    pinClocks(replica);
  });
  afterAll(async () => {
    await replica.close();
  });

  it('platform: failures through one replica block the account on the other', async () => {
    await createUser(t, { username: 'replicated', password: 'right-password' });
    for (let i = 0; i < 10; i++) expect((await platformLogin(t.app, 'replicated', 'wrong-password', `10.60.${i}.1`)).statusCode).toBe(401);
    expect((await platformLogin(replica, 'replicated', 'right-password', '10.61.0.1')).statusCode).toBe(429);
  });

  it('cluster: failures through one replica block the account on the other', async () => {
    await cli(t.app, ['user', 'add', '--username', 'kim', '--email', 'kim@example.com', '--password', 'Kim-pass12']);
    const grant = (app: TestApp['app'], password: string) => postToken(app, { ...CLIENT, grant_type: 'password', username: 'kim', password });
    const [first, second] = await Promise.all([
      Promise.all(Array.from({ length: 30 }, (_, i) => grant(t.app, `Wrong-pass${i}`))),
      Promise.all(Array.from({ length: 30 }, (_, i) => grant(replica, `Wrong-pass${i}`))),
    ]);
    expect([...first, ...second].filter((response) => response.statusCode === 400).length).toBeLessThanOrEqual(10);
    expect((await grant(replica, 'Kim-pass12')).statusCode).toBe(429);
    expect((await grant(t.app, 'Kim-pass12')).statusCode).toBe(429);
  });
});

describe('the attempt limiter itself (slots per aligned window, in MongoDB)', () => {
  it('refuses at the limit, gives back on release, opens a new window, forgets on clear, cleans up ended windows', async () => {
    let now = Date.parse('2030-01-01T00:00:00Z');
    const limiter = createAttemptLimiter(t.app.mongo.db, { collection: 'limiter_unit', maxAttempts: 3, windowMs: 60_000, now: () => now });
    const first = await limiter.reserve('k');
    for (let i = 0; i < 2; i++) expect((await limiter.reserve('k')).ok).toBe(true);
    expect(await limiter.reserve('k')).toEqual({ ok: false, retryAfterSeconds: 60 });
    if (!first.ok) throw new Error('first reservation refused');
    await limiter.release(first.slotId);
    expect((await limiter.reserve('k')).ok).toBe(true);
    now += 30_000;
    expect(await limiter.reserve('k')).toEqual({ ok: false, retryAfterSeconds: 30 });
    expect((await limiter.reserve('other')).ok).toBe(true);
    now += 30_000;
    expect((await limiter.reserve('k')).ok).toBe(true);
    await limiter.clear('k');
    for (let i = 0; i < 3; i++) expect((await limiter.reserve('k')).ok).toBe(true);
    const parallel = await Promise.all(Array.from({ length: 20 }, () => limiter.reserve('p')));
    expect(parallel.filter((reservation) => reservation.ok)).toHaveLength(3);
    now += 60_000;
    expect(await limiter.deleteExpired()).toBe(7);
    expect(await t.app.mongo.db.collection('limiter_unit').countDocuments()).toBe(0);
  });
});
