import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { bearer, login as clusterLogin } from '../fixtures/cluster/helpers.js';

/**
 * Fastify's router refuses some URLs itself (a path parameter over 500 characters, a path that is
 * not valid percent-encoding), before any hook or error handler: those answers still take the
 * URL's error format, a Kubernetes Status on /kapis and the envelope on /api.
 */
let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(async () => {
  await t.close();
});

const longName = 'a'.repeat(600);
const nodes = '/kapis/resources.platform.io/v1alpha3/nodes';

describe('a path parameter over 500 characters', () => {
  it('is a 404 Status on /kapis (no such name can exist), with or without credentials', async () => {
    const pair = await clusterLogin(t.app);
    for (const headers of [bearer(pair.access_token), {}]) {
      const res = await t.app.inject({ method: 'GET', url: `${nodes}/${longName}`, headers });
      expect(res.statusCode).toBe(404);
      expect(res.json()).toMatchObject({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404 });
      expect(res.headers['x-request-id']).toBeTruthy();
    }
  });

  it('is a 404 envelope on /api', async () => {
    const res = await t.app.inject({ method: 'POST', url: `/api/support/outLink/imA/${longName}`, payload: {}, headers: { origin: 'https://elsewhere.example' } });
    expect(res.statusCode).toBe(404);
    // The headers every answer carries, though no hook ran for this one.
    expect(res.headers).toMatchObject({
      'content-security-policy': "default-src 'none';frame-ancestors 'none'",
      'x-content-type-options': 'nosniff',
      'access-control-allow-origin': 'https://elsewhere.example',
    });
    expect(res.json()).toMatchObject({ code: 404, statusText: 'notFound', data: null });
    expect(res.json().message).toContain('500 characters');
    // At the limit the route itself answers (its own check of the link token).
    const atLimit = await t.app.inject({ method: 'POST', url: `/api/support/outLink/imA/${'a'.repeat(500)}`, payload: {} });
    expect(atLimit.json()).toMatchObject({ statusText: 'missingParams', data: null });
    expect(atLimit.json().message).toContain("'token'");
  });
});

describe('a path parameter that is not valid percent-encoding', () => {
  it('is a 400 in the URL format', async () => {
    const api = await t.app.inject({ method: 'GET', url: '/api/support/outLink/imA/%E0%A4%A' });
    expect(api.statusCode).toBe(400);
    expect(api.json()).toMatchObject({ code: 507002, statusText: 'missingParams', data: null });
    const kapis = await t.app.inject({ method: 'GET', url: `${nodes}/%E0%A4%A` });
    expect(kapis.statusCode).toBe(400);
    expect(kapis.json()).toMatchObject({ kind: 'Status', status: 'Failure', reason: 'BadRequest', code: 400 });
  });
});

/** The log lines of one answer, parsed. */
const linesOf = (requestId: string) =>
  t
    .logs()
    .split('\n')
    .filter((line) => line.includes(requestId))
    .map((line) => JSON.parse(line) as Record<string, unknown>);

describe('how refusals outside any route are logged', () => {
  it("the router's refusal is logged with its reason, as every refusal is", async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/support/outLink/imA/%E0%A4%A' });
    const line = linesOf(res.headers['x-request-id'] as string).find((each) => each.msg === 'request refused by the router');
    expect(line).toMatchObject({ level: 30, code: 'FST_ERR_BAD_URL', statusText: 'missingParams', reason: res.json().message });
  });

  it('an unknown route is logged with its reason, a channel link token in its path masked', async () => {
    const linkToken = 'channeltokennotlogged42';
    const res = await t.app.inject({ method: 'GET', url: `/api/support/outLink/feishu/${linkToken}/more?x=1` });
    expect(res.statusCode).toBe(404);
    const line = linesOf(res.headers['x-request-id'] as string).find((each) => each.msg === 'request refused');
    expect(line).toMatchObject({ level: 30, statusText: 'notFound', reason: 'Route GET /api/support/outLink/feishu/[redacted]/more not found' });
    expect(t.logs()).not.toContain(linkToken);
  });

  it("the router's refusal under /api/v1/ carries OpenAI's error object, as every /api/v1/ answer does", async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/chat/completions/%E0%A4%A' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ statusText: 'missingParams', error: { message: res.json().message, type: 'invalid_request_error', code: 'missingParams' } });
  });
});
