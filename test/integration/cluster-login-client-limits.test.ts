import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, form } from '../fixtures/cluster/helpers.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';

/**
 * Per-client limits of cluster logins (docs/decisions.md#login-attempts): every password check
 * of the grant and of HTTP Basic takes a slot of the client address's window, unknown names
 * included, so one client cannot run unlimited scrypt checks by trying names that do not exist;
 * over-long credentials are refused before any lookup.
 */
const CLIENT = { client_id: 'kubesphere', client_secret: 'kubesphere' };
const NODES = '/kapis/resources.platform.io/v1alpha3/nodes';
const PER_CLIENT = 30;
const CREDENTIAL_MAX_LENGTH = 256;
const WINDOW_MS = 10 * 60_000;
const TOO_LONG = { error: 'invalid_request', error_description: 'username and password must be at most 256 characters' };
const RATE_LIMITED = { error: 'invalid_grant', error_description: 'auth rate limit exceeded' };

let t: TestApp;

const grant = (remoteAddress: string, username: string, password: string, headers: Record<string, string> = {}) =>
  t.app.inject({
    method: 'POST',
    url: '/oauth/token',
    remoteAddress,
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    payload: form({ ...CLIENT, grant_type: 'password', username, password }),
  });

const basicGet = (remoteAddress: string, username: string, password: string) =>
  t.app.inject({ method: 'GET', url: `${NODES}?limit=1`, remoteAddress, headers: { authorization: `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}` } });

const attemptDocs = () => t.app.mongo.db.collection<{ _id: string; key: string }>('cluster_login_attempts').find({}).toArray();

/** Moves the clock to the start of a fresh, clock-aligned attempt window (no burst straddles two). */
function startFreshWindow() {
  const now = t.app.cluster.clock.now().getTime();
  t.app.cluster.clock.advance(WINDOW_MS - (now % WINDOW_MS) + 1000);
}

beforeAll(async () => {
  t = await buildTestApp();
  await cli(t.app, ['user', 'add', '--username', 'iris', '--email', 'iris@example.com', '--password', 'Iris-pass1']);
});

afterAll(async () => {
  await t.close();
});

describe('per-client limit of password checks', () => {
  it('unknown names from one address: 400 up to the limit, then 429; headers naming another client do not escape it; no name is stored', async () => {
    startFreshWindow();
    const statuses: number[] = [];
    for (let index = 0; index < PER_CLIENT + 10; index++) {
      // Client headers are the recorded source IP only: a client writes them itself.
      const response = await grant('10.9.0.1', `ghost-${index}`, 'Wrong-pass1', { 'x-client-ip': `10.8.0.${index}`, 'x-forwarded-for': `10.7.0.${index}` });
      statuses.push(response.statusCode);
      if (response.statusCode === 429) expect(response.json()).toEqual(RATE_LIMITED);
      else expect(response.json()).toEqual({ error: 'invalid_grant', error_description: 'incorrect password' });
    }
    expect(statuses.filter((status) => status === 400)).toHaveLength(PER_CLIENT);
    expect(statuses.slice(PER_CLIENT).every((status) => status === 429)).toBe(true);
    const docs = await attemptDocs();
    expect(docs.filter((doc) => doc.key === 'ip:10.9.0.1')).toHaveLength(PER_CLIENT);
    expect(docs.filter((doc) => doc._id.includes('ghost') || doc.key.includes('ghost'))).toHaveLength(0);

    // Another address is not affected; the same one is again in the next window.
    expect((await grant('10.9.0.2', 'ghost-x', 'Wrong-pass1')).statusCode).toBe(400);
    expect((await grant('10.9.0.2', 'iris', 'Iris-pass1')).statusCode).toBe(200);
    t.app.cluster.clock.advance(WINDOW_MS);
    expect((await grant('10.9.0.1', 'ghost-y', 'Wrong-pass1')).statusCode).toBe(400);
  });

  it('a full address refuses a right password too (429, as a blocked account), without using the account slot or blocking it', async () => {
    startFreshWindow();
    for (let index = 0; index < PER_CLIENT; index++) expect((await grant('10.9.1.1', `nobody-${index}`, 'Wrong-pass1')).statusCode).toBe(400);
    const refused = await grant('10.9.1.1', 'iris', 'Iris-pass1');
    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toEqual(RATE_LIMITED);
    const docs = await attemptDocs();
    expect(docs.filter((doc) => doc.key === 'iris')).toHaveLength(0);
    const account = await t.app.mongo.db.collection('cluster_users').findOne({ _id: 'iris' as never });
    expect(account?.state).toBe('Active');
    expect((await grant('10.9.1.2', 'iris', 'Iris-pass1')).statusCode).toBe(200);
  });

  it('a success gives its address slot back; failures of a known account keep theirs', async () => {
    startFreshWindow();
    for (let index = 0; index < 3; index++) expect((await grant('10.9.2.1', 'iris', 'Iris-pass1')).statusCode).toBe(200);
    expect((await attemptDocs()).filter((doc) => doc.key === 'ip:10.9.2.1')).toHaveLength(0);
    expect((await grant('10.9.2.1', 'iris', 'Wrong-pass1')).statusCode).toBe(400);
    expect((await attemptDocs()).filter((doc) => doc.key === 'ip:10.9.2.1')).toHaveLength(1);
  });

  it('HTTP Basic on /kapis counts against the same address window (401 Status once it is full)', async () => {
    startFreshWindow();
    for (let index = 0; index < PER_CLIENT; index++) {
      const response = await basicGet('10.9.3.1', `basic-ghost-${index}`, 'Wrong-pass1');
      expect(response.statusCode).toBe(401);
      expect(response.json().message).toBe('Unauthorized: incorrect password');
    }
    const refused = await basicGet('10.9.3.1', 'basic-ghost-last', 'Wrong-pass1');
    expect(refused.statusCode).toBe(401);
    expect(refused.json()).toMatchObject({ kind: 'Status', message: 'Unauthorized: auth rate limit exceeded', code: 401 });
    // The grant from that address is refused too: one window per address.
    expect((await grant('10.9.3.1', 'iris', 'Iris-pass1')).statusCode).toBe(429);
    expect((await basicGet('10.9.3.2', 'iris', 'Iris-pass1')).statusCode).toBe(200);
  });
});

describe('length of the credentials', () => {
  const long = 'a'.repeat(CREDENTIAL_MAX_LENGTH + 1);

  it(`a user name or password over ${CREDENTIAL_MAX_LENGTH} characters is 400 invalid_request, before any lookup or stored attempt`, async () => {
    startFreshWindow();
    const before = (await attemptDocs()).length;
    for (const [username, password] of [
      [long, 'Wrong-pass1'],
      ['iris', long],
      [`${long}@example.com`, 'x'],
    ] as const) {
      const response = await grant('10.9.4.1', username, password);
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual(TOO_LONG);
    }
    expect((await attemptDocs()).length).toBe(before);
    // Exactly the limit is an ordinary (wrong) login.
    const atLimit = await grant('10.9.4.1', 'a'.repeat(CREDENTIAL_MAX_LENGTH), 'b'.repeat(CREDENTIAL_MAX_LENGTH));
    expect(atLimit.statusCode).toBe(400);
    expect(atLimit.json()).toEqual({ error: 'invalid_grant', error_description: 'incorrect password' });
    expect(await t.app.mongo.db.collection('cluster_login_records').countDocuments({ username: 'iris', success: false, sourceIP: '10.9.4.1' })).toBe(0);
  });

  it('HTTP Basic with an over-long password is a 401 Status saying so, no attempt stored', async () => {
    const before = (await attemptDocs()).length;
    const response = await basicGet('10.9.4.2', 'iris', long);
    expect(response.statusCode).toBe(401);
    expect(response.json().message).toBe(`Unauthorized: ${TOO_LONG.error_description}`);
    expect((await attemptDocs()).length).toBe(before);
  });
});
