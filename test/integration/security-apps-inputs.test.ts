import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';

/**
 * Hostile inputs to the apps module must not stall the event loop (every route of both APIs
 * waits while one request computes): placeholders filled in one pass, OpenAPI documents parsed
 * and expanded in linear time with a bound on what they generate, fetched HTML reduced to text
 * in linear time. /healthz answers within 300 ms while each request runs.
 */
let t: TestApp;
let base: string;
let token: string;
let teamId: string;
let pages: http.Server;
let pagesBase: string;
const hostilePage = `<html><body>${'<script'.repeat(30_000)}`;
const hostileTags = `<html><body><p>kept</p>${'<'.repeat(40_000)}`;

beforeAll(async () => {
  t = await buildTestApp({ SSRF_ALLOW_PRIVATE: 'true' });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  teamId = (await createUser(t, { username: 'inputs-user', password: 'password-1' })).teamId;
  token = await login(t, 'inputs-user', 'password-1');
  pages = http.createServer((req, res) => {
    res.setHeader('content-type', 'text/html');
    res.end(req.url === '/scripts' ? hostilePage : hostileTags);
  });
  await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
  pagesBase = `http://127.0.0.1:${(pages.address() as AddressInfo).port}`;
});
afterAll(async () => {
  pages?.close();
  await t.close();
});

/** Starts the work, then asks /healthz while it runs; returns the healthz time and the work's result. */
async function healthzDuring<T>(work: () => Promise<T>): Promise<{ healthzMs: number; result: T }> {
  const pending = work();
  await new Promise((resolve) => setTimeout(resolve, 30));
  const started = performance.now();
  const health = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(60_000) });
  const healthzMs = performance.now() - started;
  expect(health.status).toBe(200);
  return { healthzMs, result: await pending };
}

const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${base}${url}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
const createHttpPlugin = (schema: unknown) => post('/api/core/app/httpPlugin/create', { name: 'hostile', pluginData: { apiSchemaStr: JSON.stringify(schema) } }, { token });
const teamApps = () => t.app.mongo.db.collection('apps').countDocuments({ teamId: new ObjectId(teamId) });

describe('hostile inputs to the apps module', () => {
  it('textEditor fills placeholders in one pass: inserted values are not expanded again', async () => {
    // One replace per key cost keys × text length for an anonymous request, and the result
    // depended on the order of the keys.
    const result = await post('/api/plugins/textEditor/v2', { text: '{{a}} {{b}} {{missing}}', customInputs: { a: '{{b}}', b: 'x' } });
    expect(result.status).toBe(200);
    expect(await result.json()).toEqual({ text: '{{b}} x {{missing}}' });
    const many = Object.fromEntries(Array.from({ length: 5_000 }, (_, i) => [`k${i}`, `v${i}`]));
    const filled = await post('/api/plugins/textEditor', { text: '{{k0}}-{{k4999}}-{{k{{k1}}}}', DYNAMIC_INPUT_KEY: many });
    expect(await filled.json()).toEqual({ text: 'v0-v4999-{{kv1}}' });
  });

  it('an OpenAPI path made of braces is expanded in linear time', async () => {
    const path = `/${'{'.repeat(60_000)}`;
    const { healthzMs, result } = await healthzDuring(() => createHttpPlugin({ openapi: '3.0.0', paths: { [path]: { get: { operationId: 'braces' } } } }));
    expect(healthzMs).toBeLessThan(300);
    expect(result.status).toBe(200);
  });

  it('a body of many required properties is parsed in linear time and refused past the size bound', async () => {
    const names = Array.from({ length: 20_000 }, (_, i) => `p${i}`);
    const schema = { type: 'object', required: names, properties: Object.fromEntries(names.map((n) => [n, { type: 'string' }])) };
    const before = await teamApps();
    const { healthzMs, result } = await healthzDuring(() =>
      createHttpPlugin({ openapi: '3.0.0', paths: { '/many': { post: { operationId: 'many', requestBody: { content: { 'application/json': { schema } } } } } } }),
    );
    expect(healthzMs).toBeLessThan(300);
    expect(result.status).toBe(400);
    expect(((await result.json()) as { message: string }).message).toContain('Invalid Schema');
    expect(await teamApps()).toBe(before);
  });

  it('a small document of shared $refs cannot expand into huge workflows', async () => {
    const props = Object.fromEntries(Array.from({ length: 2_000 }, (_, i) => [`f${i}`, { type: 'string' }]));
    const paths = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`/op${i}`, { post: { operationId: `op${i}`, requestBody: { $ref: '#/components/requestBodies/Big' } } }]));
    const schema = { openapi: '3.0.0', paths, components: { requestBodies: { Big: { content: { 'application/json': { schema: { type: 'object', properties: props } } } } } } };
    const before = await teamApps();
    const { healthzMs, result } = await healthzDuring(() => createHttpPlugin(schema));
    expect(healthzMs).toBeLessThan(300);
    expect(result.status).toBe(400);
    expect(((await result.json()) as { message: string }).message).toMatch(/Invalid Schema: .*characters in all/);
    expect(await teamApps()).toBe(before);
  });

  it('the fetchUrl plugin reduces a hostile page to text in linear time', async () => {
    const access = t.app.apps;
    const scripts = await healthzDuring(() => access.runSystemPlugin('fetchUrl', { url: `${pagesBase}/scripts` }));
    expect(scripts.healthzMs).toBeLessThan(300);
    expect(scripts.result).toEqual({ result: '' });
    const tags = await healthzDuring(() => access.runSystemPlugin('fetchUrl', { url: `${pagesBase}/tags` }));
    expect(tags.healthzMs).toBeLessThan(300);
    expect(String(tags.result.result).startsWith('kept')).toBe(true);
  });
});
