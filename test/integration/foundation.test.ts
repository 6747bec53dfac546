import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { buildApp } from '../../src/app.js';
import { definePlatformRoute } from '../../src/platform/define-route.js';
// @ts-expect-error plain JavaScript launcher shared with the scripts
import { startLocalDatabase } from '../../scripts/local-db.mjs';
import { buildTestApp, type TestApp, testConfig } from '../helpers/app.js';

let t: TestApp;

beforeAll(async () => {
  t = await buildTestApp({}, (app) => {
    // A probe route inside /api, to exercise body parsing and validation end to end.
    app.register(
      async (api) => {
        definePlatformRoute(api, {
          methods: ['POST', 'PUT'],
          url: '/test/echo',
          auth: [],
          input: z.object({ name: z.string().max(10), count: z.number().int().optional(), password: z.string().optional() }),
          handler: async ({ input, request }) => {
            request.log.info({ body: input, headers: request.headers }, 'echo');
            return { name: input.name, count: input.count ?? 0 };
          },
        });
        api.get('/test/slow', async () => {
          await new Promise((resolve) => setTimeout(resolve, 400));
          return { done: true };
        });
        api.get('/test/crash', async () => {
          throw new Error('mongo password=hunter2 at internal host');
        });
      },
      { prefix: '/api' },
    );
  });
});

afterAll(async () => {
  await t.close();
});

describe('routing and error rendering', () => {
  it('answers unknown platform paths with a 404 envelope', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/api/no/such/thing' });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual({ code: 404, statusText: 'notFound', message: 'Route GET /api/no/such/thing not found', data: null });
  });

  it('answers unknown root paths with a 404 envelope', async () => {
    const response = await t.app.inject({ method: 'DELETE', url: '/nowhere' });
    expect(response.statusCode).toBe(404);
    expect(response.json().statusText).toBe('notFound');
  });

  it('answers unknown /kapis paths with a Kubernetes Status', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/kapis/unknown.group/v1/things' });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toMatchObject({ kind: 'Status', status: 'Failure', reason: 'NotFound', code: 404 });
  });

  it('answers unknown /oauth paths with an OAuth error', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/oauth/nothing' });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toHaveProperty('error');
  });

  it('wraps success in the envelope', async () => {
    const response = await t.app.inject({ method: 'POST', url: '/api/test/echo', payload: { name: 'a', count: 2 } });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ code: 200, statusText: '', message: '', data: { name: 'a', count: 2 } });
    expect(response.headers['x-request-id']).toBeTruthy();
  });

  it('rejects invalid JSON with 400', async () => {
    const response = await t.app.inject({ method: 'POST', url: '/api/test/echo', headers: { 'content-type': 'application/json' }, payload: '{"name":' });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ code: 507002, statusText: 'missingParams', data: null });
  });

  it('rejects a wrong field type with 400 naming the field', async () => {
    const response = await t.app.inject({ method: 'POST', url: '/api/test/echo', payload: { name: 'abc', count: 'x' } });
    expect(response.statusCode).toBe(400);
    expect(response.json().message).toMatch(/'count'/);
  });

  it('rejects an oversized value with 400 naming the field', async () => {
    const response = await t.app.inject({ method: 'PUT', url: '/api/test/echo', payload: { name: 'x'.repeat(11) } });
    expect(response.statusCode).toBe(400);
    expect(response.json().message).toMatch(/'name'/);
  });

  it('rejects an unsupported content type with 415', async () => {
    const response = await t.app.inject({ method: 'POST', url: '/api/test/echo', headers: { 'content-type': 'application/xml' }, payload: '<a/>' });
    expect(response.statusCode).toBe(415);
    expect(response.json().statusText).toBe('unsupportedMediaType');
  });

  it('rejects a body over 1 MB with 413', async () => {
    const response = await t.app.inject({ method: 'POST', url: '/api/test/echo', payload: { name: 'a', pad: 'x'.repeat(1024 * 1024 + 10) } });
    expect(response.statusCode).toBe(413);
    expect(response.json().statusText).toBe('payloadTooLarge');
  });

  it('hides unexpected errors behind a 500 with the request id', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/api/test/crash' });
    expect(response.statusCode).toBe(500);
    const body = response.json();
    expect(body.message).toBe(`Internal error (request id ${response.headers['x-request-id']})`);
    expect(JSON.stringify(body)).not.toMatch(/hunter2/);
  });
});

describe('logging', () => {
  it('redacts secret headers and fields', async () => {
    await t.app.inject({
      method: 'POST',
      url: '/api/test/echo',
      headers: { authorization: 'Bearer fastgpt-supersecretkey', token: 'jwt-session-secret', rootkey: 'root-secret-value', cookie: 'fastgpt_token=cookie-secret' },
      payload: { name: 'n', password: 'plain-password-secret' },
    });
    const logs = t.logs();
    expect(logs).toMatch(/"echo"/);
    for (const secret of ['fastgpt-supersecretkey', 'jwt-session-secret', 'root-secret-value', 'cookie-secret', 'plain-password-secret']) {
      expect(logs).not.toContain(secret);
    }
    expect(logs).toContain('[redacted]');
  });

  it('redacts secrets in logged query strings', async () => {
    await t.app.inject({ method: 'GET', url: '/api/nothing/here?username=alice&password=query-password-secret&token=query-token-secret' });
    const logs = t.logs();
    expect(logs).toContain('username=alice');
    expect(logs).not.toContain('query-password-secret');
    expect(logs).not.toContain('query-token-secret');
  });
});

describe('health', () => {
  it('reports liveness and readiness', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/healthz' })).json()).toEqual({ status: 'ok' });
    const ready = await t.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toEqual({ status: 'ok' });
  });

  it('answers 503 on /readyz when the database is down', async () => {
    const db = await startLocalDatabase();
    const app = await buildApp(testConfig({ MONGODB_URI: `${db.uri}readiness` }));
    try {
      await app.ready();
      expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
      await db.stop();
      const response = await app.inject({ method: 'GET', url: '/readyz' });
      expect(response.statusCode).toBe(503);
      expect(response.json()).toEqual({ status: 'unavailable', message: 'database is not reachable' });
      expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    } finally {
      await db.stop();
      await app.close();
    }
  });
});

describe('graceful shutdown', () => {
  it('finishes in-flight requests, then stops accepting and closes the database client', async () => {
    const other = await buildTestApp({}, (app) => {
      app.get('/api/test/slow', async () => {
        await new Promise((resolve) => setTimeout(resolve, 400));
        return { done: true };
      });
    });
    await other.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = other.app.server.address() as AddressInfo;
    const inFlight = fetch(`http://127.0.0.1:${port}/api/test/slow`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    await other.app.mongo.db.dropDatabase();
    const closing = other.app.close();
    const response = await inFlight;
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ done: true });
    await closing;
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
    await expect(other.app.mongo.db.command({ ping: 1 })).rejects.toThrow();
  });
});

describe('openapi', () => {
  it('serves the document', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    expect(response.statusCode).toBe(200);
    expect(response.json().openapi).toBe('3.0.3');
    expect(response.json().paths['/readyz']).toBeDefined();
  });
});
