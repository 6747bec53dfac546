import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signToken } from '../../src/cluster/oauth/jwt.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { bearer, cli, login, postToken } from '../fixtures/cluster/helpers.js';

let t: TestApp;
let frank: { access_token: string; refresh_token: string };
const NODES = '/kapis/resources.platform.io/v1alpha3/nodes';
const ALIAS = '/kapis/resources.kubesphere.io/v1alpha3/nodes';
const basic = (user: string, password: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` });

const get = (url: string, headers: Record<string, string> = {}) => t.app.inject({ method: 'GET', url, headers });

function forged(overrides: Record<string, unknown>, secret = t.config.CLUSTER_JWT_SECRET) {
  const now = Math.floor(Date.now() / 1000);
  return signToken({ iss: 'kubesphere', sub: 'frank', username: 'frank', token_type: 'access_token', iat: now, exp: now + 7200, ...overrides } as never, secret);
}

beforeAll(async () => {
  t = await buildTestApp();
  await cli(t.app, ['user', 'add', '--username', 'frank', '--email', 'frank@example.com', '--password', 'Frank-pass1']);
  await cli(t.app, ['user', 'add', '--username', 'gina', '--email', 'gina@example.com', '--password', 'Gina-pass1']);
  await cli(t.app, ['user', 'add', '--username', 'hanna', '--email', 'hanna@example.com', '--password', 'Hanna-pass1']);
  frank = await login(t.app, 'frank', 'Frank-pass1');
});

afterAll(async () => {
  await t.close();
});

describe('anonymous requests', () => {
  it('listing nodes without a header is 403 with the reference message', async () => {
    const response = await get(NODES);
    expect(response.statusCode).toBe(403);
    expect(response.json()).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'nodes.resources.platform.io is forbidden: User "system:anonymous" cannot list resource "nodes" in API group "resources.platform.io" at the cluster scope',
      reason: 'Forbidden',
      details: { group: 'resources.platform.io', kind: 'nodes' },
      code: 403,
    });
  });

  it('names the KubeSphere group and the node on the alias get route', async () => {
    const response = await get(`${ALIAS}/node1`);
    expect(response.statusCode).toBe(403);
    expect(response.json().message).toBe(
      'nodes.resources.kubesphere.io "node1" is forbidden: User "system:anonymous" cannot get resource "nodes" in API group "resources.kubesphere.io" at the cluster scope',
    );
    expect(response.json().details).toEqual({ name: 'node1', group: 'resources.kubesphere.io', kind: 'nodes' });
  });

  it('a blank header counts as no header', async () => {
    expect((await get(NODES, { authorization: '  ' })).statusCode).toBe(403);
  });
});

describe('bearer errors are 401 Status bodies saying why', () => {
  it.each([
    ['Bearer with no token', () => ({ authorization: 'Bearer ' }), 'Unauthorized: the Bearer authorization header carries no token'],
    ['unknown scheme', () => ({ authorization: 'Token abc' }), 'Unauthorized: unsupported authorization scheme "Token", expected Bearer'],
    ['malformed token', () => bearer('not-a-jwt'), 'Unauthorized: token contains an invalid number of segments'],
    ['bad base64', () => bearer('a$b.c.d'), 'Unauthorized: illegal base64 data at input byte 1'],
    ['wrong signature', () => bearer(forged({}, 'another-secret-0123456789')), 'Unauthorized: signature is invalid'],
    [
      'alg none',
      () => bearer(`${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${Buffer.from('{"username":"frank"}').toString('base64url')}.`),
      'Unauthorized: signing method none is invalid',
    ],
    ['never issued (not in the allow-list)', () => bearer(forged({ iat: Math.floor(Date.now() / 1000) - 5 })), 'Unauthorized: token not found in cache'],
    ['refresh token as bearer', () => bearer(frank.refresh_token), 'Unauthorized: a refresh_token cannot be used as a bearer token, use the access_token'],
    ['wrong Basic password', () => basic('frank', 'nope'), 'Unauthorized: incorrect password'],
    ['Basic for an unknown user', () => basic('kubesphere', 'kubesphere'), 'Unauthorized: incorrect password'],
  ])('%s', async (_name, headers, message) => {
    const response = await get(NODES, headers());
    expect(response.statusCode).toBe(401);
    expect(response.json()).toMatchObject({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Unauthorized', code: 401, message });
  });

  it('expired token: "jwt: token is expired by <duration>"', async () => {
    const now = Math.floor(Date.now() / 1000);
    const response = await get(NODES, bearer(forged({ iat: now - 7300, exp: now - 100 })));
    expect(response.statusCode).toBe(401);
    expect(response.json().message).toMatch(/^Unauthorized: jwt: token is expired by 1m4\d(\.\d+)?s$/);
  });

  it('token issued in the future beyond the 10 s skew', async () => {
    const now = Math.floor(Date.now() / 1000);
    const response = await get(NODES, bearer(forged({ iat: now + 3600, exp: now + 7200 })));
    expect(response.statusCode).toBe(401);
    expect(response.json().message).toMatch(/^Unauthorized: jwt: token used before issued, iat:.+ UTC, now:.+ UTC$/);
  });
});

describe('account state behind a valid token', () => {
  it('accepts the scheme case-insensitively', async () => {
    expect((await get(NODES, { authorization: `bearer ${frank.access_token}` })).statusCode).toBe(200);
  });

  it('a disabled account is refused, gets no new pair by refresh, and its old sessions stay ended once enabled', async () => {
    const gina = await login(t.app, 'gina', 'Gina-pass1');
    const other = await login(t.app, 'frank', 'Frank-pass1');
    await cli(t.app, ['user', 'disable', 'gina']);
    const refused = await get(NODES, bearer(gina.access_token));
    expect(refused.statusCode).toBe(401);
    expect(refused.json().message).toMatch(/^Unauthorized: /);
    const refreshOf = (pair: { refresh_token: string }) =>
      postToken(t.app, { grant_type: 'refresh_token', refresh_token: pair.refresh_token, client_id: 'kubesphere', client_secret: 'kubesphere' });
    const refresh = await refreshOf(gina);
    expect(refresh.statusCode).toBe(400);
    expect(refresh.json().error).toBe('invalid_grant');
    await cli(t.app, ['user', 'enable', 'gina']);
    expect((await get(NODES, bearer(gina.access_token))).statusCode).toBe(401);
    expect((await refreshOf(gina)).statusCode).toBe(400);
    const fresh = await login(t.app, 'gina', 'Gina-pass1');
    expect((await get(NODES, bearer(fresh.access_token))).statusCode).toBe(200);
    // Nobody else's sessions end.
    expect((await get(NODES, bearer(other.access_token))).statusCode).toBe(200);
    // A disable whose revocation never ran (its process stopped after the state write): the refresh grant reads the state.
    const users = t.app.mongo.db.collection('cluster_users');
    await users.updateOne({ _id: 'gina' as never }, { $set: { state: 'Disabled' } });
    try {
      expect((await refreshOf(fresh)).json()).toEqual({ error: 'invalid_grant', error_description: 'account is not active' });
    } finally {
      await cli(t.app, ['user', 'enable', 'gina']);
    }
  });

  it('a deleted account is refused', async () => {
    await cli(t.app, ['user', 'add', '--username', 'hank', '--email', 'hank@example.com', '--password', 'Hank-pass1']);
    const hank = await login(t.app, 'hank', 'Hank-pass1');
    await t.app.mongo.db.collection('cluster_users').deleteOne({ _id: 'hank' as never });
    const response = await get(NODES, bearer(hank.access_token));
    expect(response.statusCode).toBe(401);
    expect(response.json().message).toBe('Unauthorized: user.iam.kubesphere.io "hank" not found');
  });

  it('an expired access token is refused once the clock passes its lifetime', async () => {
    const pair = await login(t.app, 'frank', 'Frank-pass1');
    t.app.cluster.clock.advance(7200_000 + 5000);
    const response = await get(NODES, bearer(pair.access_token));
    expect(response.statusCode).toBe(401);
    expect(response.json().message).toMatch(/^Unauthorized: jwt: token is expired by \d+(\.\d+)?s$/);
  });
});

describe('HTTP Basic is a password login, as in the reference', () => {
  it('right credentials list nodes; a wrong password writes a Password-type failure record', async () => {
    expect((await get(NODES, basic('gina', 'Gina-pass1'))).statusCode).toBe(200);
    await get(NODES, basic('gina', 'Wrong-pass1'));
    const failure = await t.app.mongo.db.collection('cluster_login_records').findOne({ username: 'gina', success: false });
    expect(failure).toMatchObject({ type: 'Password', reason: 'incorrect password' });
    // Go decodes Basic credentials as padded base64: the same text without its padding is no login.
    const padded = Buffer.from('hanna:Hanna-pass1').toString('base64');
    expect(padded.endsWith('=')).toBe(true);
    expect((await get(NODES, { authorization: `Basic ${padded}` })).statusCode).toBe(200);
    expect((await get(NODES, { authorization: `Basic ${padded.replace(/=+$/, '')}` })).statusCode).toBe(401);
  });

  it('client credentials in a Basic header on /oauth/token are refused before the handler', async () => {
    const response = await postToken(
      t.app,
      { grant_type: 'password', username: 'gina', password: 'Gina-pass1' },
      { authorization: `Basic ${Buffer.from('kubesphere:kubesphere').toString('base64')}` },
    );
    expect(response.statusCode).toBe(401);
    expect(response.json()).toEqual({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'Unauthorized: incorrect password', reason: 'Unauthorized', code: 401 });
  });
});

describe('the authentication step runs on /oauth too', () => {
  it('a bad bearer header on /oauth/token is a 401 even with a valid form', async () => {
    const response = await postToken(t.app, { grant_type: 'password', username: 'gina', password: 'Gina-pass1', client_id: 'kubesphere', client_secret: 'kubesphere' }, bearer('junk'));
    expect(response.statusCode).toBe(401);
  });

  it('a refresh token accepted (and cached) on /oauth/token is still refused as bearer on /kapis right after', async () => {
    const pair = await login(t.app, 'gina', 'Gina-pass1');
    // The bearer passes on /oauth (a refresh token is allowed there); the form is refused after it.
    const refused = await postToken(t.app, { grant_type: 'password', client_id: 'kubesphere', client_secret: 'kubesphere' }, bearer(pair.refresh_token));
    expect(refused.statusCode).toBe(400);
    for (let attempt = 0; attempt < 2; attempt++) {
      const response = await get(NODES, bearer(pair.refresh_token));
      expect(response.statusCode).toBe(401);
      expect(response.json().message).toBe('Unauthorized: a refresh_token cannot be used as a bearer token, use the access_token');
    }
    expect((await get(NODES, bearer(pair.access_token))).statusCode).toBe(200);
  });

  it('ks-console refresh: the refresh token sent as bearer on /oauth/token is accepted', async () => {
    const pair = await login(t.app, 'gina', 'Gina-pass1');
    const response = await postToken(
      t.app,
      { grant_type: 'refresh_token', refresh_token: pair.refresh_token, client_id: 'kubesphere', client_secret: 'kubesphere' },
      bearer(pair.refresh_token),
    );
    expect(response.statusCode).toBe(200);
  });
});
