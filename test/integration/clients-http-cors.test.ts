import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { apiKeyHeaders, createApiKey, login } from '../helpers/platform.js';
import { createPublishedApp, simpleChatGraph, startChatApp } from './chat-helpers.js';

/**
 * CORS as a browser client on another origin meets it (real clients item 1): FastGPT reflects
 * any Origin and answers preflights; here credentials (the session cookie) are allowed only for
 * the origins in CORS_ORIGINS.
 */
let t: TestApp;
let fake: FakeOpenAi;
let key: string;

const WEB_UI = 'https://chat-ui.example.org';
const CONSOLE = 'https://console.example.com';

beforeAll(async () => {
  ({ t, fake } = await startChatApp(() => ({ CORS_ORIGINS: `${CONSOLE}, https://other.example.com` })));
  const token = await login(t, 'root', 'root-password-1');
  const appId = await createPublishedApp(t, token, 'CORS bot', simpleChatGraph);
  key = await createApiKey(t, token, { name: 'browser key', appId });
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

/** What a browser sends before a cross-origin POST with an Authorization header. */
const preflight = (url: string, origin: string, headers = 'authorization,content-type') =>
  t.app.inject({
    method: 'OPTIONS',
    url,
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': headers },
  });

describe('browser preflight and request from any origin, without credentials', () => {
  it('/api/v1/chat/completions: preflight allows the method and headers, the request carries the reflected origin', async () => {
    const answer = await preflight('/api/v1/chat/completions', WEB_UI);
    expect([200, 204]).toContain(answer.statusCode);
    expect(answer.headers['access-control-allow-origin']).toBe(WEB_UI);
    expect(String(answer.headers['access-control-allow-methods'])).toContain('POST');
    expect(String(answer.headers['access-control-allow-headers']).toLowerCase()).toBe('authorization,content-type');
    expect(answer.headers['access-control-allow-credentials']).toBeUndefined();
    expect(String(answer.headers.vary)).toContain('Origin');

    const response = await t.app.inject({
      method: 'POST',
      url: '/api/v1/chat/completions',
      headers: { origin: WEB_UI, ...apiKeyHeaders(key) },
      payload: { messages: [{ role: 'user', content: 'from a browser' }] },
    });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.headers['access-control-allow-origin']).toBe(WEB_UI);
    expect(response.headers['access-control-allow-credentials']).toBeUndefined();
    expect(response.json().choices[0].message.content).toBe('Echo: from a browser');
    // A script on the other origin may read the request id and Retry-After.
    expect(response.headers['access-control-expose-headers']).toBe('x-request-id, retry-after, x-should-retry');
    expect(response.headers['x-request-id']).toBeTruthy();
  });

  it('a request without an Origin (not a browser on another site) gets no CORS headers, but Vary: Origin', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/healthz' });
    expect(response.statusCode).toBe(200);
    for (const name of ['access-control-allow-origin', 'access-control-expose-headers', 'access-control-allow-credentials']) expect(response.headers[name]).toBeUndefined();
    expect(response.headers.vary).toBe('Origin');
  });

  it('/oauth/token: preflight and the form POST (errors carry the CORS headers too)', async () => {
    const answer = await preflight('/oauth/token', WEB_UI, 'content-type');
    expect([200, 204]).toContain(answer.statusCode);
    expect(answer.headers['access-control-allow-origin']).toBe(WEB_UI);
    const form = { origin: WEB_UI, 'content-type': 'application/x-www-form-urlencoded' };
    const granted = await t.app.inject({ method: 'POST', url: '/oauth/token', headers: form, payload: 'grant_type=password&client_id=kubesphere&client_secret=kubesphere&username=admin&password=P%4088w0rd' });
    expect(granted.statusCode).toBe(200);
    expect(granted.headers['access-control-allow-origin']).toBe(WEB_UI);
    const refused = await t.app.inject({ method: 'POST', url: '/oauth/token', headers: form, payload: 'grant_type=password&client_id=kubesphere&client_secret=kubesphere&username=admin&password=wrong' });
    expect(refused.statusCode).toBe(400);
    expect(refused.headers['access-control-allow-origin']).toBe(WEB_UI);
  });

  it('preflights for the other headers real clients send (token, rootkey) and other methods', async () => {
    const answer = await t.app.inject({
      method: 'OPTIONS',
      url: '/api/core/dataset/delete?id=0123456789abcdef01234567',
      headers: { origin: WEB_UI, 'access-control-request-method': 'DELETE', 'access-control-request-headers': 'token,rootkey,content-type' },
    });
    expect([200, 204]).toContain(answer.statusCode);
    expect(String(answer.headers['access-control-allow-methods'])).toContain('DELETE');
    expect(answer.headers['access-control-allow-headers']).toBe('token,rootkey,content-type');
  });

  it('a request without Origin gets no CORS headers', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/healthz' });
    expect(response.headers['access-control-allow-origin']).toBeUndefined();
  });
});

describe('origins listed in CORS_ORIGINS also get credentials (the session cookie)', () => {
  it('preflight and request say Access-Control-Allow-Credentials: true', async () => {
    const answer = await preflight('/api/support/user/account/loginByPassword', CONSOLE, 'content-type');
    expect(answer.headers['access-control-allow-origin']).toBe(CONSOLE);
    expect(answer.headers['access-control-allow-credentials']).toBe('true');
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/support/user/account/loginByPassword',
      headers: { origin: CONSOLE },
      payload: { username: 'root', password: 'root-password-1' },
    });
    expect(response.statusCode).toBe(200);
    expect(response.headers['access-control-allow-origin']).toBe(CONSOLE);
    expect(response.headers['access-control-allow-credentials']).toBe('true');
  });

  it('an origin that only resembles a listed one gets no credentials', async () => {
    for (const origin of ['https://console.example.com.evil.example', 'http://console.example.com', 'https://console.example.com:8443']) {
      const answer = await preflight('/api/v1/chat/completions', origin);
      expect(answer.headers['access-control-allow-origin']).toBe(origin);
      expect(answer.headers['access-control-allow-credentials']).toBeUndefined();
    }
  });
});
