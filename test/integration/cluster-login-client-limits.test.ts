import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, form } from '../fixtures/cluster/helpers.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';

/**
 * Per-client limits of cluster logins (docs/decisions.md#login-attempts): the decoy check an
 * unknown name gets (grant and HTTP Basic) takes a slot of the client address's window, so one
 * client cannot run unlimited scrypt checks by trying names that do not exist; past the window
 * the answer is the same, without a check. Known accounts take no address slot (their own limit
 * applies): a shared address does not lock its users out. Over-long credentials are refused
 * before any lookup.
 */
const CLIENT = { client_id: 'kubesphere', client_secret: 'kubesphere' };
const NODES = '/kapis/resources.platform.io/v1alpha3/nodes';
const PER_CLIENT = 30;
const CREDENTIAL_MAX_LENGTH = 256;
const WINDOW_MS = 10 * 60_000;
const TOO_LONG = { error: 'invalid_request', error_description: 'username and password must be at most 256 characters' };
const INCORRECT = { error: 'invalid_grant', error_description: 'incorrect password' };

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
  it('unknown names from one address: at most 30 decoy checks a window, the same 400 after them; headers naming another client do not escape it; no name is stored', async () => {
    startFreshWindow();
    const responses = [];
    for (let index = 0; index < PER_CLIENT + 10; index++) {
      // Client headers are the recorded source IP only: a client writes them itself.
      responses.push(await grant('10.9.0.1', `ghost-${index}`, 'Wrong-pass1', { 'x-client-ip': `10.8.0.${index}`, 'x-forwarded-for': `10.7.0.${index}` }));
    }
    // Past the window the answer does not change (it would tell which names exist).
    expect(responses.every((response) => response.statusCode === 400 && JSON.stringify(response.json()) === JSON.stringify(INCORRECT))).toBe(true);
    // Each decoy check took one slot of the address, and there are 30 of them: 10 ran no check.
    const docs = await attemptDocs();
    expect(docs.filter((doc) => doc.key === 'ip:10.9.0.1')).toHaveLength(PER_CLIENT);
    expect(docs.filter((doc) => doc._id.includes('ghost') || doc.key.includes('ghost'))).toHaveLength(0);

    // The account behind the same address is not affected, nor another address.
    expect((await grant('10.9.0.1', 'iris', 'Iris-pass1')).statusCode).toBe(200);
    expect((await grant('10.9.0.2', 'ghost-x', 'Wrong-pass1')).statusCode).toBe(400);
    expect((await attemptDocs()).filter((doc) => doc.key === 'ip:10.9.0.2')).toHaveLength(1);
    t.app.cluster.clock.advance(WINDOW_MS);
    expect((await grant('10.9.0.1', 'ghost-y', 'Wrong-pass1')).statusCode).toBe(400);
  });

  it('a known account takes no slot of the address: its failures count on its own limit only', async () => {
    startFreshWindow();
    for (let index = 0; index < 3; index++) expect((await grant('10.9.2.1', 'iris', 'Iris-pass1')).statusCode).toBe(200);
    expect((await grant('10.9.2.1', 'iris', 'Wrong-pass1')).statusCode).toBe(400);
    const docs = await attemptDocs();
    expect(docs.filter((doc) => doc.key === 'ip:10.9.2.1')).toHaveLength(0);
    expect(docs.filter((doc) => doc.key === 'iris')).toHaveLength(1);
    expect((await grant('10.9.2.1', 'iris', 'Iris-pass1')).statusCode).toBe(200);
  });

  it('HTTP Basic on /kapis: unknown names share the same address window; the account behind it still logs in', async () => {
    startFreshWindow();
    for (let index = 0; index < PER_CLIENT + 5; index++) {
      const response = await basicGet('10.9.3.1', `basic-ghost-${index}`, 'Wrong-pass1');
      expect(response.statusCode).toBe(401);
      expect(response.json()).toMatchObject({ kind: 'Status', message: 'Unauthorized: incorrect password', code: 401 });
    }
    expect((await attemptDocs()).filter((doc) => doc.key === 'ip:10.9.3.1')).toHaveLength(PER_CLIENT);
    // One window per address: the grant's unknown names from there run no check either.
    expect((await grant('10.9.3.1', 'ghost-z', 'Wrong-pass1')).statusCode).toBe(400);
    expect((await attemptDocs()).filter((doc) => doc.key === 'ip:10.9.3.1')).toHaveLength(PER_CLIENT);
    expect((await basicGet('10.9.3.1', 'iris', 'Iris-pass1')).statusCode).toBe(200);
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
