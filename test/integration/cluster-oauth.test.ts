import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { ADMIN_PASSWORD, bearer, cli, postToken } from '../fixtures/cluster/helpers.js';

let t: TestApp;
const CLIENT = { client_id: 'kubesphere', client_secret: 'kubesphere' };
const NODES = '/kapis/resources.platform.io/v1alpha3/nodes';

const claimsOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1] as string, 'base64url').toString()) as Record<string, unknown>;
const records = (username: string) => t.app.mongo.db.collection('cluster_login_records').find({ username }).toArray();
const account = (username: string) => t.app.mongo.db.collection('cluster_users').findOne({ _id: username as never });

beforeAll(async () => {
  t = await buildTestApp();
  await cli(t.app, ['user', 'add', '--username', 'alice', '--email', 'alice@example.com', '--password', 'Alice-pass1']);
  await cli(t.app, ['user', 'add', '--username', 'dora', '--email', 'dora@example.com', '--password', 'Dora-pass1']);
  await cli(t.app, ['user', 'disable', 'dora']);
});

afterAll(async () => {
  await t.close();
});

describe('POST /oauth/token transport', () => {
  it.each([
    ['application/json', JSON.stringify({ grant_type: 'password', username: 'admin', password: ADMIN_PASSWORD, ...CLIENT })],
    ['text/plain', 'grant_type=password'],
    ['multipart/form-data; boundary=x', '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\nb\r\n--x--\r\n'],
  ])('refuses a %s body with 415 and an OAuth JSON error', async (contentType, payload) => {
    const response = await t.app.inject({ method: 'POST', url: '/oauth/token', headers: { 'content-type': contentType }, payload });
    expect(response.statusCode).toBe(415);
    expect(response.headers['content-type']).toMatch(/application\/json/);
    expect(response.json().error).toBe('invalid_request');
  });

  it('accepts a charset parameter on the form content type', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded; charset=UTF-8' },
      payload: new URLSearchParams({ grant_type: 'password', username: 'alice', password: 'Alice-pass1', ...CLIENT }).toString(),
    });
    expect(response.statusCode).toBe(200);
  });

  it('answers other methods with 405 and Allow: POST', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/oauth/token' });
    expect(response.statusCode).toBe(405);
    expect(response.headers.allow).toBe('POST');
  });

  it('reads parameters from the body only, first duplicate winning', async () => {
    const viaQuery = await t.app.inject({
      method: 'POST',
      url: '/oauth/token?client_id=kubesphere&client_secret=kubesphere',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'grant_type=password&username=alice&password=Alice-pass1',
    });
    expect(viaQuery.statusCode).toBe(401);
    const duplicated = await t.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'client_id=kubesphere&client_id=other&client_secret=kubesphere&grant_type=password&username=alice&password=Alice-pass1',
    });
    expect(duplicated.statusCode).toBe(200);
  });

  it('a body Go cannot parse is 401 invalid_client with Go\'s text; escapes and + decode as Go decodes them', async () => {
    const post = (payload: string) => t.app.inject({ method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload });
    for (const [payload, description] of [
      ['client_id=kubesphere&client_secret=kubesphere&grant_type=password&username=alice&password=Alice-pass1%zz', 'invalid URL escape "%zz"'],
      ['client_id=kubesphere&client_secret=kubesphere&grant_type=password&username=alice&password=%', 'invalid URL escape "%"'],
      ['client_id=kubesphere;client_secret=kubesphere&grant_type=password', 'invalid semicolon separator in query'],
    ]) {
      const response = await post(payload!);
      expect(response.statusCode, payload).toBe(401);
      expect(response.json()).toEqual({ error: 'invalid_client', error_description: description });
    }
    const encoded = await post('client_id=kube%73phere&client_secret=kubesphere&grant_type=password&username=alice&password=Alice%2Dpass1');
    expect(encoded.statusCode, encoded.body).toBe(200);
  });
});

describe('POST /oauth/token error table', () => {
  it.each([
    ['unknown client', { ...CLIENT, client_id: 'nope', grant_type: 'password' }, 401, { error: 'invalid_client', error_description: 'the OAuth client was not found' }],
    ['missing client_id', { client_secret: 'kubesphere', grant_type: 'password' }, 401, { error: 'invalid_client', error_description: 'the OAuth client was not found' }],
    ['wrong secret', { ...CLIENT, client_secret: 'wrong', grant_type: 'password' }, 401, { error: 'invalid_client', error_description: 'invalid client credential' }],
    ['missing secret', { client_id: 'kubesphere', grant_type: 'password' }, 401, { error: 'invalid_client', error_description: 'invalid client credential' }],
    ['bad client before bad grant', { client_id: 'x', grant_type: 'client_credentials' }, 401, { error: 'invalid_client', error_description: 'the OAuth client was not found' }],
    ['missing grant_type', { ...CLIENT }, 400, { error: 'unsupported_grant_type' }],
    ['authorization_code grant', { ...CLIENT, grant_type: 'authorization_code' }, 400, { error: 'unsupported_grant_type' }],
    ['client_credentials grant', { ...CLIENT, grant_type: 'client_credentials' }, 400, { error: 'unsupported_grant_type' }],
    ['empty username', { ...CLIENT, grant_type: 'password', password: 'x' }, 400, { error: 'invalid_grant', error_description: 'incorrect password' }],
    ['empty password', { ...CLIENT, grant_type: 'password', username: 'alice' }, 400, { error: 'invalid_grant', error_description: 'incorrect password' }],
    ['unknown user', { ...CLIENT, grant_type: 'password', username: 'ghost', password: 'Ghost-pass1' }, 400, { error: 'invalid_grant', error_description: 'incorrect password' }],
    ['names are case-sensitive', { ...CLIENT, grant_type: 'password', username: 'Alice', password: 'Alice-pass1' }, 400, { error: 'invalid_grant', error_description: 'incorrect password' }],
    ['disabled, right password', { ...CLIENT, grant_type: 'password', username: 'dora', password: 'Dora-pass1' }, 400, { error: 'invalid_grant', error_description: 'account is not active' }],
    ['disabled, wrong password', { ...CLIENT, grant_type: 'password', username: 'dora', password: 'nope' }, 400, { error: 'invalid_grant', error_description: 'account is not active' }],
    ['refresh: garbage', { ...CLIENT, grant_type: 'refresh_token', refresh_token: 'garbage' }, 400, { error: 'invalid_grant', error_description: 'token contains an invalid number of segments' }],
    ['refresh: missing', { ...CLIENT, grant_type: 'refresh_token' }, 400, { error: 'invalid_grant', error_description: 'token contains an invalid number of segments' }],
    ['refresh: bad base64', { ...CLIENT, grant_type: 'refresh_token', refresh_token: 'a.b*c.d' }, 400, { error: 'invalid_grant', error_description: 'illegal base64 data at input byte 0' }],
  ])('%s', async (_name, fields, status, body) => {
    const response = await postToken(t.app, fields as Record<string, string>);
    expect(response.statusCode).toBe(status);
    expect(response.json()).toEqual(body);
  });

  it('writes no login record for unknown or disabled users', async () => {
    expect(await records('ghost')).toHaveLength(0);
    expect(await records('dora')).toHaveLength(0);
  });

  it('records a failed attempt for a wrong password, with source IP and user agent', async () => {
    const response = await postToken(
      t.app,
      { ...CLIENT, grant_type: 'password', username: 'alice', password: 'Wrong-pass1' },
      { 'x-forwarded-for': '203.0.113.9, 10.0.0.1', 'user-agent': 'curl/8.5.0' },
    );
    expect(response.json()).toEqual({ error: 'invalid_grant', error_description: 'incorrect password' });
    const failures = (await records('alice')).filter((record) => !record.success);
    expect(failures.at(-1)).toMatchObject({ type: 'Token', provider: '', reason: 'incorrect password', sourceIP: '203.0.113.9', userAgent: 'curl/8.5.0' });
  });
});

describe('password grant success', () => {
  it('returns the token JSON with HS256 JWTs carrying the reference claims', async () => {
    const response = await postToken(t.app, { ...CLIENT, grant_type: 'password', username: 'admin', password: ADMIN_PASSWORD }, { 'x-real-ip': '198.51.100.7' });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(Object.keys(body)).toEqual(['access_token', 'token_type', 'refresh_token', 'expires_in']);
    expect(body).toMatchObject({ token_type: 'Bearer', expires_in: 7200 });
    expect(JSON.parse(Buffer.from(body.access_token.split('.')[0], 'base64url').toString())).toEqual({ alg: 'HS256', typ: 'JWT' });
    const access = claimsOf(body.access_token);
    expect(access).toMatchObject({ iss: 'kubesphere', sub: 'admin', username: 'admin', token_type: 'access_token', extra: { uninitialized: ['true'] } });
    expect((access.exp as number) - (access.iat as number)).toBe(7200);
    const refresh = claimsOf(body.refresh_token);
    expect(refresh).toMatchObject({ token_type: 'refresh_token', username: 'admin' });
    expect((refresh.exp as number) - (refresh.iat as number)).toBe(14400);
    // The allow-list holds digests, never the tokens.
    const stored = await t.app.mongo.db.collection('cluster_tokens').find({ username: 'admin' }).toArray();
    expect(stored.length).toBeGreaterThanOrEqual(2);
    expect(JSON.stringify(stored)).not.toContain(body.access_token);
    const success = (await records('admin')).at(-1);
    expect(success).toMatchObject({ success: true, reason: 'authenticated successfully', type: 'Token', sourceIP: '198.51.100.7' });
    expect((await account('admin'))?.lastLoginTime).toBeInstanceOf(Date);
  });

  it('accepts the e-mail address as user name, and has no extra claim for initialized users', async () => {
    const response = await postToken(t.app, { ...CLIENT, grant_type: 'password', username: 'alice@example.com', password: 'Alice-pass1' });
    expect(response.statusCode).toBe(200);
    expect(claimsOf(response.json().access_token).extra).toBeUndefined();
    expect(claimsOf(response.json().access_token).username).toBe('alice');
  });

  it('keeps at most 100 login records per account', async () => {
    const now = Date.now();
    const old = Array.from({ length: 120 }, (_, index) => ({
      username: 'alice',
      type: 'Token',
      provider: '',
      sourceIP: '10.0.0.1',
      userAgent: 'seed',
      success: true,
      reason: 'authenticated successfully',
      createdAt: new Date(now - (index + 1) * 1000),
    }));
    await t.app.mongo.db.collection('cluster_login_records').insertMany(old);
    await postToken(t.app, { ...CLIENT, grant_type: 'password', username: 'alice', password: 'Alice-pass1' });
    const kept = await records('alice');
    expect(kept).toHaveLength(100);
    expect(kept.some((record) => record.userAgent !== 'seed')).toBe(true);
  });
});

describe('refresh and logout', () => {
  it('refresh returns a new pair; the old refresh token stays valid with multiple login on', async () => {
    const first = (await postToken(t.app, { ...CLIENT, grant_type: 'password', username: 'alice', password: 'Alice-pass1' })).json();
    t.app.cluster.clock.advance(2000);
    const refreshed = await postToken(t.app, { ...CLIENT, grant_type: 'refresh_token', refresh_token: first.refresh_token });
    expect(refreshed.statusCode).toBe(200);
    const pair = refreshed.json();
    expect(pair).toMatchObject({ token_type: 'Bearer', expires_in: 7200 });
    expect(pair.access_token).not.toBe(first.access_token);
    expect((await t.app.inject({ method: 'GET', url: NODES, headers: bearer(pair.access_token) })).statusCode).toBe(200);
    const again = await postToken(t.app, { ...CLIENT, grant_type: 'refresh_token', refresh_token: first.refresh_token });
    expect(again.statusCode).toBe(200);
  });

  it('keeps the extra claims through a refresh', async () => {
    const admin = (await postToken(t.app, { ...CLIENT, grant_type: 'password', username: 'admin', password: ADMIN_PASSWORD })).json();
    const refreshed = (await postToken(t.app, { ...CLIENT, grant_type: 'refresh_token', refresh_token: admin.refresh_token })).json();
    expect(claimsOf(refreshed.access_token).extra).toEqual({ uninitialized: ['true'] });
  });

  it('refuses an access token as refresh token, and a forged one', async () => {
    const pair = (await postToken(t.app, { ...CLIENT, grant_type: 'password', username: 'alice', password: 'Alice-pass1' })).json();
    const wrongType = await postToken(t.app, { ...CLIENT, grant_type: 'refresh_token', refresh_token: pair.access_token });
    expect(wrongType.json()).toEqual({ error: 'invalid_grant', error_description: 'ivalid token type access_token want refresh_token' });
    const [header, payload] = pair.refresh_token.split('.');
    const forged = await postToken(t.app, { ...CLIENT, grant_type: 'refresh_token', refresh_token: `${header}.${payload}.${'A'.repeat(43)}` });
    expect(forged.json()).toEqual({ error: 'invalid_grant', error_description: 'signature is invalid' });
  });

  it('logout revokes every token of the user; refresh then fails with "token not found in cache"', async () => {
    const one = (await postToken(t.app, { ...CLIENT, grant_type: 'password', username: 'alice', password: 'Alice-pass1' })).json();
    const two = (await postToken(t.app, { ...CLIENT, grant_type: 'password', username: 'alice', password: 'Alice-pass1' })).json();
    const logout = await t.app.inject({ method: 'GET', url: '/oauth/logout', headers: bearer(one.access_token) });
    expect(logout.statusCode).toBe(200);
    expect(logout.json()).toEqual({ message: 'success' });
    for (const token of [one.access_token, two.access_token]) {
      const response = await t.app.inject({ method: 'GET', url: NODES, headers: bearer(token) });
      expect(response.statusCode).toBe(401);
      expect(response.json().message).toBe('Unauthorized: token not found in cache');
    }
    const refresh = await postToken(t.app, { ...CLIENT, grant_type: 'refresh_token', refresh_token: two.refresh_token });
    expect(refresh.json()).toEqual({ error: 'invalid_grant', error_description: 'token not found in cache' });
    expect(await t.app.cluster.tokens.countForUser('alice')).toBe(0);
  });

  it('anonymous logout succeeds and changes nothing; a redirect URI gives a 302', async () => {
    const anonymous = await t.app.inject({ method: 'GET', url: '/oauth/logout' });
    expect(anonymous.json()).toEqual({ message: 'success' });
    const redirect = await t.app.inject({ method: 'GET', url: '/oauth/logout?post_logout_redirect_uri=%2Flogin&state=s1' });
    expect(redirect.statusCode).toBe(302);
    expect(redirect.headers.location).toBe('/login?state=s1');
  });

  it('refuses an expired refresh token with the Go duration in the message', async () => {
    const pair = (await postToken(t.app, { ...CLIENT, grant_type: 'password', username: 'alice', password: 'Alice-pass1' })).json();
    t.app.cluster.clock.advance(14400_000 + 65_000);
    const response = await postToken(t.app, { ...CLIENT, grant_type: 'refresh_token', refresh_token: pair.refresh_token });
    expect(response.statusCode).toBe(400);
    expect(response.json().error_description).toMatch(/^jwt: token is expired by 1m(5|6)(\.\d+)?s$/);
  });

  it('periodic cleanup drops expired allow-list entries and login records older than 7 days', async () => {
    const before = await t.app.mongo.db.collection('cluster_tokens').countDocuments({ username: 'alice' });
    expect(before).toBeGreaterThan(0);
    await t.app.mongo.db.collection('cluster_login_records').insertOne({ username: 'alice', success: false, createdAt: new Date(t.app.cluster.clock.now().getTime() - 8 * 86400_000) });
    const removed = await t.app.cluster.cleanup();
    expect(removed.tokens).toBeGreaterThanOrEqual(before);
    expect(removed.loginRecords).toBeGreaterThanOrEqual(1);
    expect(await t.app.mongo.db.collection('cluster_tokens').countDocuments({ username: 'alice' })).toBe(0);
  });
});
