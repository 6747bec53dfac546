import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser } from '../helpers/platform.js';
import { bearer, cli, login as clusterLogin, postToken } from '../fixtures/cluster/helpers.js';

/**
 * Redirects, cookies and the Basic header on /oauth/token (security review item 13, real clients
 * item 10): /oauth/logout follows only same-host or configured URIs; the session cookie is Secure
 * over https; a failing Basic header on /oauth/token is the Kubernetes 401 Status KubeSphere gives.
 */
let t: TestApp;
const NODES = '/kapis/resources.platform.io/v1alpha3/nodes';
const CLIENT = { client_id: 'kubesphere', client_secret: 'kubesphere' };
const basic = (user: string, password: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` });

beforeAll(async () => {
  t = await buildTestApp({ OAUTH_LOGOUT_REDIRECT_URIS: 'https://console.example.com, https://sso.example.com/logged-out' });
  await cli(t.app, ['user', 'add', '--username', 'lea', '--email', 'lea@example.com', '--password', 'Lea-pass12']);
});

afterAll(async () => {
  await t.close();
});

const logout = (query: string, headers: Record<string, string> = {}) => t.app.inject({ method: 'GET', url: `/oauth/logout?${query}`, headers });

describe('/oauth/logout redirects only where allowed', () => {
  it.each([
    'https://evil.example/',
    '//evil.example/steal',
    '/\\evil.example/steal',
    'https://console.example.com.evil.example/',
    'https://sso.example.com/elsewhere',
    'javascript:alert(1)',
    'https://lea:secret@localhost/login',
    // Dot segments that resolve to a path beginning with two slashes: a browser reads the
    // relative location `//evil.example` as another host.
    '/.//evil.example',
    '/..//evil.example/x',
    '/a/..//evil.example/x',
  ])('%s is a 400 and the session survives', async (uri) => {
    const pair = await clusterLogin(t.app, 'lea', 'Lea-pass12');
    const response = await logout(`post_logout_redirect_uri=${encodeURIComponent(uri)}`, bearer(pair.access_token));
    expect(response.statusCode).toBe(400);
    expect(response.headers.location).toBeUndefined();
    expect(response.json()).toMatchObject({ error: 'invalid_request' });
    expect(response.json().error_description).toMatch(/^post_logout_redirect_uri /);
    expect((await t.app.inject({ method: 'GET', url: NODES, headers: bearer(pair.access_token) })).statusCode).toBe(200);
  });

  it('a relative URI stays relative, with the state appended, and the logout happens', async () => {
    const pair = await clusterLogin(t.app, 'lea', 'Lea-pass12');
    const response = await logout(`post_logout_redirect_uri=${encodeURIComponent('/console/login?from=ks')}&state=xyz`, bearer(pair.access_token));
    expect(response.statusCode).toBe(302);
    expect(response.headers.location).toBe('/console/login?from=ks&state=xyz');
    expect((await t.app.inject({ method: 'GET', url: NODES, headers: bearer(pair.access_token) })).statusCode).toBe(401);
  });

  it('a Host header that is not a host name matches nothing: 400, never a crash', async () => {
    const response = await logout(`post_logout_redirect_uri=${encodeURIComponent('/login')}`, { host: 'not a host' });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('an absolute URI on the request host, and configured URIs (an origin allows any path, a full URI only itself)', async () => {
    const own = await logout(`post_logout_redirect_uri=${encodeURIComponent('https://ks.example.net/login')}`, { host: 'ks.example.net' });
    expect(own.statusCode).toBe(302);
    expect(own.headers.location).toBe('https://ks.example.net/login');
    const origin = await logout(`post_logout_redirect_uri=${encodeURIComponent('https://console.example.com/any/path')}&state=s1`);
    expect(origin.headers.location).toBe('https://console.example.com/any/path?state=s1');
    const exact = await logout(`post_logout_redirect_uri=${encodeURIComponent('https://sso.example.com/logged-out')}`);
    expect(exact.statusCode).toBe(302);
    expect(exact.headers.location).toBe('https://sso.example.com/logged-out');
  });
});

describe('the platform session cookie is Secure over https', () => {
  const loginResponse = (app: TestApp['app'], headers: Record<string, string> = {}) =>
    app.inject({ method: 'POST', url: '/api/support/user/account/loginByPassword', headers, payload: { username: 'root', password: 'root-password-1' } });
  const setCookie = (response: { headers: Record<string, unknown> }) => String(response.headers['set-cookie']);
  // One app per setting, built side by side; the two TRUST_PROXY=true tests share theirs (the
  // first logs in from the inject address, the second counts failures of another client address).
  let proxied: TestApp;
  let proxiedByAddress: TestApp;
  let forced: TestApp;
  beforeAll(async () => {
    [proxied, proxiedByAddress, forced] = await Promise.all([
      buildTestApp({ TRUST_PROXY: 'true' }),
      buildTestApp({ TRUST_PROXY: '127.0.0.1' }),
      buildTestApp({ COOKIE_SECURE: 'true' }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([proxied?.close(), proxiedByAddress?.close(), forced?.close()]);
  });

  it('not over plain http, and X-Forwarded-Proto is ignored unless TRUST_PROXY says so', async () => {
    const plain = await loginResponse(t.app);
    expect(setCookie(plain)).toMatch(/^fastgpt_token=/);
    expect(setCookie(plain)).not.toMatch(/;\s*Secure/i);
    expect(setCookie(await loginResponse(t.app, { 'x-forwarded-proto': 'https' }))).not.toMatch(/;\s*Secure/i);
  });

  it('behind a trusted proxy that says https: Secure on login, logout and the cookie a rejected session clears', async () => {
    const https = { 'x-forwarded-proto': 'https' };
    const login = await loginResponse(proxied.app, https);
    expect(setCookie(login)).toMatch(/;\s*Secure/i);
    expect(setCookie(login)).toMatch(/HttpOnly/i);
    const token = login.json().data.token as string;
    const out = await proxied.app.inject({ method: 'POST', url: '/api/support/user/account/loginout', headers: { ...https, token } });
    expect(setCookie(out)).toMatch(/^fastgpt_token=;.*Secure/i);
    const rejected = await proxied.app.inject({ method: 'GET', url: '/api/support/user/account/tokenLogin', headers: { ...https, token: 'not-a-session' } });
    expect(rejected.statusCode).toBe(401);
    expect(setCookie(rejected)).toMatch(/^fastgpt_token=;.*Secure/i);
    expect(setCookie(await loginResponse(proxied.app))).not.toMatch(/;\s*Secure/i);
  });

  it('a trusted proxy also gives the client address to the login limits', async () => {
    await createUser(proxiedByAddress, { username: 'behind-proxy', password: 'right-password' });
    // Attempt windows are aligned on the clock: stay inside one.
    const pinned = Date.now();
    proxiedByAddress.app.identity.clock.now = () => pinned;
    const attempt = (ip: string, password: string) =>
      proxiedByAddress.app.inject({ method: 'POST', url: '/api/support/user/account/loginByPassword', headers: { 'x-forwarded-for': ip }, payload: { username: `user-${ip}`, password } });
    for (let i = 0; i < 10; i++) expect((await attempt('198.51.100.7', 'nope-nope')).statusCode).toBe(401);
    expect((await attempt('198.51.100.7', 'nope-nope')).statusCode).toBe(429);
    const other = await proxiedByAddress.app.inject({
      method: 'POST',
      url: '/api/support/user/account/loginByPassword',
      headers: { 'x-forwarded-for': '198.51.100.8' },
      payload: { username: 'behind-proxy', password: 'right-password' },
    });
    expect(other.statusCode).toBe(200);
  });

  it('TRUST_PROXY=true is one proxy: addresses a client writes before the one the proxy appended do not escape the login limits', async () => {
    const pinned = Date.now();
    proxied.app.identity.clock.now = () => pinned;
    // The proxy appends the real client (203.0.113.9) to whatever the client sent.
    const attempt = (n: number) =>
      proxied.app.inject({
        method: 'POST',
        url: '/api/support/user/account/loginByPassword',
        headers: { 'x-forwarded-for': `198.51.100.${n}, 203.0.113.9` },
        payload: { username: `spoofer-${n}`, password: 'nope-nope' },
      });
    for (let i = 0; i < 10; i++) expect((await attempt(i)).statusCode).toBe(401);
    expect((await attempt(10)).statusCode).toBe(429);
  });

  it('COOKIE_SECURE=true marks it Secure whatever the transport', async () => {
    expect(setCookie(await loginResponse(forced.app))).toMatch(/;\s*Secure/i);
  });
});

describe('POST /oauth/token with an HTTP Basic header (read as a user login, as KubeSphere does)', () => {
  const grant = { ...CLIENT, grant_type: 'password', username: 'lea', password: 'Lea-pass12' };

  it.each([
    ['client credentials (client_secret_basic)', basic('kubesphere', 'kubesphere')],
    ['a user with a wrong password', basic('lea', 'Wrong-pass1')],
  ])('%s: 401 Kubernetes Status, before any OAuth handling', async (_name, headers) => {
    const response = await postToken(t.app, grant, headers);
    expect(response.statusCode).toBe(401);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(response.json()).toEqual({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'Unauthorized: incorrect password', reason: 'Unauthorized', code: 401 });
  });

  it('a Basic header that is not base64 user:password is a 401 Status too', async () => {
    const response = await postToken(t.app, grant, { authorization: 'Basic !!!' });
    expect(response.statusCode).toBe(401);
    expect(response.json()).toMatchObject({ kind: 'Status', reason: 'Unauthorized', code: 401 });
  });

  it('a correct Basic user login passes authentication; the form still decides (client, grant), and it leaves no login record', async () => {
    const recordsBefore = await t.app.mongo.db.collection('cluster_login_records').countDocuments({ username: 'lea', type: 'Password', success: true });
    const noClient = await postToken(t.app, { grant_type: 'password', username: 'lea', password: 'Lea-pass12' }, basic('lea', 'Lea-pass12'));
    expect(noClient.statusCode).toBe(401);
    expect(noClient.json()).toEqual({ error: 'invalid_client', error_description: 'the OAuth client was not found' });
    const granted = await postToken(t.app, grant, basic('lea', 'Lea-pass12'));
    expect(granted.statusCode).toBe(200);
    expect(granted.json()).toMatchObject({ token_type: 'Bearer' });
    const badGrant = await postToken(t.app, { ...grant, password: 'Wrong-pass1' }, basic('lea', 'Lea-pass12'));
    expect(badGrant.json()).toEqual({ error: 'invalid_grant', error_description: 'incorrect password' });
    expect(await t.app.mongo.db.collection('cluster_login_records').countDocuments({ username: 'lea', type: 'Password', success: true })).toBe(recordsBefore);
  });
});
