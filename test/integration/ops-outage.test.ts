import type { InjectOptions } from 'fastify';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error plain JavaScript launcher shared with the scripts
import { startLocalDatabase } from '../../scripts/local-db.mjs';
import { bearer, login as clusterLogin, postToken } from '../fixtures/cluster/helpers.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { apiKeyHeaders, authHeaders, createApiKey, login } from '../helpers/platform.js';

/**
 * A database outage, for real: a private database server is stopped under a running app, then
 * started again on the same port and data. Every API answers 503 + Retry-After in its own error
 * format (never 500, never a 401 that logs a client out) as soon as the driver gives up, and the
 * app recovers by itself when the database is back. Promptness is checked without a clock: the
 * client carries the documented fail-fast options (not the driver's 30 s server selection), and
 * each 503 is logged with the driver's own failure (never the app's readiness timer winning).
 */
interface LocalDatabase {
  uri: string;
  port: number;
  stop: () => Promise<void>;
}

const NODES = '/kapis/resources.kubesphere.io/v1alpha3/nodes';
let dataDir: string;
let db: LocalDatabase | undefined;
let t: TestApp;
let session: string;
let apiKey: string;
let clusterToken: string;

const start = (port?: number): Promise<LocalDatabase> => startLocalDatabase({ dataDir, port, log: () => undefined });

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'ops-outage-'));
  db = await start();
  t = await buildTestApp({ MONGODB_URI: `${db.uri}ops_outage`, TRAINING_WORKER: 'true' });
  session = await login(t, 'root', 'root-password-1');
  apiKey = await createApiKey(t, session);
  clusterToken = (await clusterLogin(t.app)).access_token;
}, 60_000);

afterAll(async () => {
  await t?.close();
  await db?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

/** The request's response and the log lines written while it was served. */
async function during(request: InjectOptions | (() => ReturnType<typeof postToken>)) {
  const from = t.logs().length;
  const response = typeof request === 'function' ? await request() : await t.app.inject(request);
  return { response, logged: t.logs().slice(from) };
}

/** The line an answer was logged with names the driver's own failure (MongoNetworkError, ...). */
const driverFailure = (msg: string) => new RegExp(`"dbError":"Mongo\\w*Error: [^"]*","msg":"${msg}"`);

describe('with the database down', () => {
  beforeAll(async () => {
    await db!.stop();
  });

  it('the client gives up within the documented fail-fast timeouts, not the driver defaults', () => {
    // README: serverSelectionTimeoutMS=1000, connectTimeoutMS=1000 unless the URI sets them (it
    // does not here). With the driver's 30 s a database that stops answering holds every request.
    // A command the server took and never answers ends after two minutes (not never).
    expect(t.app.mongo.client.options).toMatchObject({ serverSelectionTimeoutMS: 1000, connectTimeoutMS: 1000, socketTimeoutMS: 120_000 });
  });

  it('platform routes answer 503 with Retry-After in the envelope once the driver fails, and keep the session', async () => {
    const requests = [
      { method: 'GET' as const, url: '/api/core/app/list', headers: authHeaders(session) },
      { method: 'GET' as const, url: '/api/support/user/account/tokenLogin', headers: authHeaders(session) },
      { method: 'POST' as const, url: '/api/v1/chat/completions', headers: apiKeyHeaders(apiKey), payload: { messages: [{ role: 'user', content: 'hi' }] } },
      { method: 'POST' as const, url: '/api/support/user/account/loginByPassword', payload: { username: 'root', password: 'root-password-1' } },
      { method: 'POST' as const, url: '/api/core/ai/token', headers: { rootkey: t.config.ROOT_KEY }, payload: { messages: [{ role: 'user', content: 'hi' }] } },
      // A share link cannot be checked either: 503, not "invalid link".
      { method: 'POST' as const, url: '/api/v1/chat/completions', payload: { shareId: 'some-share-id', outLinkUid: 'visitor-1', messages: [{ role: 'user', content: 'hi' }] } },
    ];
    for (const request of requests) {
      const { response, logged } = await during(request);
      expect(response.statusCode, `${request.url}: ${response.body}`).toBe(503);
      expect(logged, request.url).toMatch(driverFailure('database unavailable: answered 503'));

      expect(Number(response.headers['retry-after'])).toBeGreaterThan(0);
      // Nothing that would end the client's session.
      expect(response.headers['set-cookie'], request.url).toBeUndefined();
      const body = response.json();
      expect(body).toMatchObject({ code: 503, statusText: 'serviceUnavailable', data: null });
      expect(body.message).toMatch(/database/i);
    }
  });

  it('the OAuth token endpoint answers 503 temporarily_unavailable, not invalid_grant', async () => {
    const { response, logged } = await during(() => postToken(t.app, { grant_type: 'password', username: 'admin', password: 'P@88w0rd', client_id: 'kubesphere', client_secret: 'kubesphere' }));
    expect(logged).toMatch(driverFailure('database unavailable: answered 503'));
    expect(response.statusCode, response.body).toBe(503);
    expect(Number(response.headers['retry-after'])).toBeGreaterThan(0);
    expect(response.json()).toMatchObject({ error: 'temporarily_unavailable' });
    expect(response.json().error_description).toMatch(/database/i);
  });

  it('Kubernetes routes with a valid bearer token (or Basic credentials) answer a 503 Status, not 401', async () => {
    const basic = { authorization: `Basic ${Buffer.from('admin:P@88w0rd').toString('base64')}` };
    for (const [url, headers] of [
      [NODES, bearer(clusterToken)],
      [`${NODES}/some-node`, bearer(clusterToken)],
      [NODES, basic],
    ] as const) {
      const { response, logged } = await during({ method: 'GET', url, headers });
      expect(response.statusCode, response.body).toBe(503);
      expect(logged, url).toMatch(driverFailure('database unavailable: answered 503'));
      expect(Number(response.headers['retry-after'])).toBeGreaterThan(0);
      expect(response.json()).toMatchObject({ kind: 'Status', status: 'Failure', reason: 'ServiceUnavailable', code: 503 });
    }
  });

  it('readiness says 503, liveness still 200', async () => {
    const ready = await during({ method: 'GET', url: '/readyz' });
    expect(ready.response.statusCode).toBe(503);
    // The ping failed by itself: the app's own readiness timer did not have to answer.
    expect(ready.logged).toMatch(driverFailure('readiness check failed'));
    expect(ready.logged).not.toMatch(/no answer within/);
    expect(ready.response.headers['retry-after']).toBeDefined();
    expect((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  });

  it('counts the failures in /metrics', async () => {
    const text = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    const requestErrors = [...text.matchAll(/^database_errors_total\{source="request",error="[A-Za-z]+"\} (\d+)$/gm)].reduce((sum, match) => sum + Number(match[1]), 0);
    expect(requestErrors).toBeGreaterThanOrEqual(8);
  });

  it('the training worker logs one readable line per failure, never a circular object', async () => {
    // The worker polls every 2 s and backs off from there: its first failure comes quickly.
    const deadline = Date.now() + 8000;
    while (!/training worker: iteration failed/.test(t.logs()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
    expect(t.logs()).toMatch(/training worker: iteration failed \(1 in a row, next try in \d+ s\): Mongo\w+Error/);
    expect(t.logs()).not.toMatch(/unable to serialize|circular/i);
  });
});

describe('when the database is back', () => {
  beforeAll(async () => {
    db = await start(db!.port);
  }, 30_000);

  it('the service recovers by itself: same session, same bearer token', async () => {
    const deadline = Date.now() + 15_000;
    let ready = 0;
    while (Date.now() < deadline) {
      ready = (await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode;
      if (ready === 200) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(ready).toBe(200);
    const apps = await t.app.inject({ method: 'GET', url: '/api/core/app/list', headers: authHeaders(session) });
    expect(apps.statusCode, apps.body).toBe(200);
    const nodes = await t.app.inject({ method: 'GET', url: NODES, headers: bearer(clusterToken) });
    expect(nodes.statusCode, nodes.body).toBe(200);
    expect((await clusterLogin(t.app)).access_token).toBeTruthy();
  });
});
