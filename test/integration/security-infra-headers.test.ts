import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { login } from '../helpers/platform.js';

/**
 * Security headers on every response (security review item 4, central part): a strict CSP for
 * JSON, nosniff, no referrer, no framing; Cross-Origin-Resource-Policy lets other sites use the
 * API; no HSTS unless configured.
 */
let t: TestApp;
let token: string;

beforeAll(async () => {
  t = await buildTestApp();
  token = await login(t, 'root', 'root-password-1');
});

afterAll(async () => {
  await t.close();
});

const EXPECTED = {
  'content-security-policy': "default-src 'none';frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-resource-policy': 'cross-origin',
};

function expectSecurityHeaders(headers: Record<string, unknown>): void {
  expect(headers).toMatchObject(EXPECTED);
  expect(headers['strict-transport-security']).toBeUndefined();
}

describe('helmet headers on every kind of response', () => {
  it('a platform route', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/api/support/user/account/tokenLogin', headers: { token } });
    expect(response.statusCode).toBe(200);
    expectSecurityHeaders(response.headers);
  });

  it('an OAuth route (success and error)', async () => {
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const success = await t.app.inject({ method: 'POST', url: '/oauth/token', headers: form, payload: 'grant_type=password&client_id=kubesphere&client_secret=kubesphere&username=admin&password=P%4088w0rd' });
    expect(success.statusCode).toBe(200);
    expectSecurityHeaders(success.headers);
    const refused = await t.app.inject({ method: 'POST', url: '/oauth/token', headers: form, payload: 'grant_type=password&client_id=nobody' });
    expect(refused.statusCode).toBe(401);
    expectSecurityHeaders(refused.headers);
  });

  it('a /kapis route (a 403 Status), a platform error and an unknown path', async () => {
    const kapis = await t.app.inject({ method: 'GET', url: '/kapis/resources.platform.io/v1alpha3/nodes' });
    expect(kapis.statusCode).toBe(403);
    expectSecurityHeaders(kapis.headers);
    const unauthorized = await t.app.inject({ method: 'POST', url: '/api/core/app/list', payload: {} });
    expect(unauthorized.statusCode).toBe(401);
    expectSecurityHeaders(unauthorized.headers);
    const missing = await t.app.inject({ method: 'GET', url: '/nowhere' });
    expect(missing.statusCode).toBe(404);
    expectSecurityHeaders(missing.headers);
  });

  it('health and the OpenAPI document', async () => {
    expectSecurityHeaders((await t.app.inject({ method: 'GET', url: '/healthz' })).headers);
    expectSecurityHeaders((await t.app.inject({ method: 'GET', url: '/openapi.json' })).headers);
  });
});

describe('HSTS only when configured', () => {
  it('HSTS_MAX_AGE_SECONDS sends Strict-Transport-Security', async () => {
    const hsts = await buildTestApp({ HSTS_MAX_AGE_SECONDS: '31536000' });
    try {
      const response = await hsts.app.inject({ method: 'GET', url: '/healthz' });
      expect(response.headers['strict-transport-security']).toBe('max-age=31536000');
    } finally {
      await hsts.close();
    }
  });
});
