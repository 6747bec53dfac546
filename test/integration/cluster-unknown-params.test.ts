import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { bearer, cli, login } from '../fixtures/cluster/helpers.js';

/**
 * Unrecognised parameters are ignored on the cluster routes (RFC 6749 §3.2 for the token
 * endpoint; unknown query keys everywhere), including the keys the global input guard refuses
 * elsewhere: they are dropped before it runs, so no code sees them.
 */
let t: TestApp;
const base = 'client_id=kubesphere&client_secret=kubesphere&grant_type=password&username=alice&password=Alice-pass1';
const post = (payload: string) => t.app.inject({ method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload });

beforeAll(async () => {
  t = await buildTestApp();
  await cli(t.app, ['user', 'add', '--username', 'alice', '--email', 'alice@example.com', '--password', 'Alice-pass1']);
});
afterAll(async () => {
  await t.close();
});

describe('unknown parameters on the cluster routes', () => {
  it.each(['toString=1', 'valueOf=1', '__proto__=1', 'constructor=1', 'toString=1&toString=2'])('the token form field %s is ignored', async (extra) => {
    const response = await post(`${base}&${extra}`);
    expect(response.statusCode).toBe(200);
    expect(response.json().access_token).toEqual(expect.any(String));
  });

  it('a password with an unescaped % gets the reference text, and none of it reaches the log', async () => {
    const response = await post(base.replace('password=Alice-pass1', 'password=Sec%ret-pw9'));
    expect(response.statusCode).toBe(401);
    expect(response.json()).toMatchObject({ error: 'invalid_client', error_description: 'invalid URL escape "%re"' });
    expect(t.logs()).toContain('malformed form body');
    expect(t.logs()).not.toContain('%re');
  });

  it('a bad escape in an unknown field is still the reference error', async () => {
    const response = await post(`${base}&toString=%zz`);
    expect(response.statusCode).toBe(401);
    expect(response.json().error).toBe('invalid_client');
  });

  it.each(['__proto__=1', 'toString=1', 'valueOf=a&valueOf=b'])('the node list query key %s is ignored', async (query) => {
    const pair = await login(t.app, 'alice', 'Alice-pass1');
    const response = await t.app.inject({ method: 'GET', url: `/kapis/resources.platform.io/v1alpha3/nodes?${query}`, headers: bearer(pair.access_token) });
    expect(response.statusCode).toBe(200);
  });

  it('the logout query ignores them too', async () => {
    const pair = await login(t.app, 'alice', 'Alice-pass1');
    const response = await t.app.inject({ method: 'GET', url: '/oauth/logout?__proto__=x&toString=y', headers: bearer(pair.access_token) });
    expect(response.statusCode).toBe(200);
  });

  it('a NUL in a known field is still refused', async () => {
    expect((await post(`${base.replace('Alice-pass1', 'a%00b')}`)).statusCode).toBe(400);
  });

  it('Accept: application/xml on /oauth/token gets JSON (documented; the reference answers 406)', async () => {
    const response = await t.app.inject({ method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/xml' }, payload: base });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
  });
});
