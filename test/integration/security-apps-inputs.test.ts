import type { AddressInfo } from 'node:net';
import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type GeneratedPlugin, generatePlugins, MAX_GENERATED_WORKFLOW_CHARS } from '../../src/platform/apps/openapi-plugins.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { type LocalSite, startLocalSite } from '../helpers/local-site.js';
import { createUser, login } from '../helpers/platform.js';

/**
 * Hostile inputs to the apps module must not stall the event loop (every route of both APIs
 * waits while one request computes): placeholders filled in one pass, OpenAPI documents parsed
 * and expanded in linear time with a bound on what they generate, fetched HTML reduced to text
 * in linear time. Each defence is checked by what it does, never by a clock: the documented
 * refusal and nothing stored, the work counted on the parsed document (reads of a `required`
 * list, operations expanded before the bound stops), and the results that only the linear
 * scans give (a match attempt stops at the next brace or '<'; an unclosed script drops the rest).
 */
let t: TestApp;
let base: string;
let token: string;
let teamId: string;
let pages: LocalSite;
let pagesBase: string;
const hostilePage = `<html><body>${'<script'.repeat(30_000)}`;
const hostileTags = `<html><body><p>kept</p>a<b<i>c</i>${'<'.repeat(40_000)}`;

beforeAll(async () => {
  t = await buildTestApp({ SSRF_ALLOW_PRIVATE: 'true' });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  teamId = (await createUser(t, { username: 'inputs-user', password: 'password-1' })).teamId;
  token = await login(t, 'inputs-user', 'password-1');
  pages = await startLocalSite((req, res) => {
    res.setHeader('content-type', 'text/html');
    res.end(req.url === '/scripts' ? hostilePage : hostileTags);
  });
  pagesBase = pages.url;
});
afterAll(async () => {
  await pages?.close();
  await t.close();
});

interface Reads {
  /** Elements read by index (a list scanned once per lookup reads n² of them). */
  items: number;
  /** Times the keys were listed (an object expanded once per operation that refers to it). */
  listings: number;
}

/**
 * Runs generatePlugins (what the route runs) on `doc`, with the value at `path` of the parsed
 * document replaced by a proxy that counts the reads: work counted, not timed.
 */
function generateCounting(doc: unknown, path: string[]): { outcome: GeneratedPlugin[] | Error; reads: Reads } {
  const parse = JSON.parse;
  const reads: Reads = { items: 0, listings: 0 };
  let swapped = false;
  const spy = vi.spyOn(JSON, 'parse').mockImplementationOnce((text: string) => {
    const parsed = parse(text) as unknown;
    const holder = path.slice(0, -1).reduce((node, key) => (node as Record<string, unknown>)[key], parsed) as Record<string, object>;
    const last = path[path.length - 1]!;
    holder[last] = new Proxy(holder[last]!, {
      get(target, key, receiver) {
        if (typeof key === 'string' && /^\d+$/.test(key)) reads.items++;
        return Reflect.get(target, key, receiver);
      },
      ownKeys(target) {
        reads.listings++;
        return Reflect.ownKeys(target);
      },
    });
    swapped = true;
    return parsed;
  });
  try {
    const text = JSON.stringify(doc);
    let outcome: GeneratedPlugin[] | Error;
    try {
      outcome = generatePlugins(text);
    } catch (error) {
      outcome = error as Error;
    }
    expect(swapped, 'the document was parsed as JSON').toBe(true);
    return { outcome, reads };
  } finally {
    spy.mockRestore();
  }
}

/** The inputs of a generated plugin's node of that type. */
const nodeInputs = (plugin: GeneratedPlugin, nodeType: string) =>
  (plugin.modules.find((m) => m.flowNodeType === nodeType)?.inputs ?? []) as { key: string; value?: unknown; required?: boolean }[];

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
    // `{name}` becomes `{{name}}`, a match attempt stopping at the next brace: `{x{y}` keeps
    // `{x` and fills `{y}`. A key that may hold '{' (a match running on to the next '}') is
    // what rescanned the rest of the path from every brace.
    const path = `/{x{y}/${'{'.repeat(60_000)}`;
    const doc = { openapi: '3.0.0', paths: { [path]: { get: { operationId: 'braces' } } } };
    const [plugin] = generatePlugins(JSON.stringify(doc));
    expect(nodeInputs(plugin!, 'httpRequest468').find((i) => i.key === 'system_httpReqUrl')?.value).toBe(`/{x{{y}}/${'{'.repeat(60_000)}`);
    const result = await createHttpPlugin(doc);
    expect(result.status).toBe(200);
  });

  it('a body of many required properties is parsed in linear time and refused past the size bound', async () => {
    // Each property's "required" is one lookup in a set: the list is read once, not per property.
    const few = Array.from({ length: 1_000 }, (_, i) => `p${i}`);
    const fewSchema = { type: 'object', required: few.filter((_, i) => i % 2 === 0), properties: Object.fromEntries(few.map((n) => [n, { type: 'string' }])) };
    const fewDoc = { openapi: '3.0.0', paths: { '/few': { post: { operationId: 'few', requestBody: { content: { 'application/json': { schema: fewSchema } } } } } } };
    const { outcome, reads } = generateCounting(fewDoc, ['paths', '/few', 'post', 'requestBody', 'content', 'application/json', 'schema', 'required']);
    const required = fewSchema.required.length;
    expect(reads.items).toBeGreaterThanOrEqual(required);
    expect(reads.items).toBeLessThanOrEqual(2 * required);
    const inputs = nodeInputs((outcome as GeneratedPlugin[])[0]!, 'pluginInput');
    expect(inputs.filter((i) => i.required).map((i) => i.key)).toEqual(fewSchema.required);

    const names = Array.from({ length: 20_000 }, (_, i) => `p${i}`);
    const schema = { type: 'object', required: names, properties: Object.fromEntries(names.map((n) => [n, { type: 'string' }])) };
    const before = await teamApps();
    const result = await createHttpPlugin({ openapi: '3.0.0', paths: { '/many': { post: { operationId: 'many', requestBody: { content: { 'application/json': { schema } } } } } } });
    expect(result.status).toBe(400);
    expect(((await result.json()) as { message: string }).message).toMatch(/^Invalid Schema: operation post \/many would make a workflow over 1000000 characters$/);
    expect(await teamApps()).toBe(before);
  });

  it('a small document of shared $refs cannot expand into huge workflows', async () => {
    const props = Object.fromEntries(Array.from({ length: 2_000 }, (_, i) => [`f${i}`, { type: 'string' }]));
    const operations = 100;
    const paths = Object.fromEntries(Array.from({ length: operations }, (_, i) => [`/op${i}`, { post: { operationId: `op${i}`, requestBody: { $ref: '#/components/requestBodies/Big' } } }]));
    const schema = { openapi: '3.0.0', paths, components: { requestBodies: { Big: { content: { 'application/json': { schema: { type: 'object', properties: props } } } } } } };
    // Expansion stops at the operation that takes the total over the bound, not after all of them.
    const [one] = generatePlugins(JSON.stringify({ ...schema, paths: { '/op0': paths['/op0'] } }));
    const perOperation = JSON.stringify(one!.modules).length;
    const { outcome, reads } = generateCounting(schema, ['components', 'requestBodies', 'Big', 'content', 'application/json', 'schema', 'properties']);
    expect((outcome as Error).message).toBe(`Invalid Schema: the operations would make workflows over ${MAX_GENERATED_WORKFLOW_CHARS} characters in all`);
    expect(reads.listings).toBe(Math.floor(MAX_GENERATED_WORKFLOW_CHARS / perOperation) + 1);
    expect(reads.listings).toBeLessThan(operations);

    const before = await teamApps();
    const result = await createHttpPlugin(schema);
    expect(result.status).toBe(400);
    expect(((await result.json()) as { message: string }).message).toMatch(/Invalid Schema: .*characters in all/);
    expect(await teamApps()).toBe(before);
  });

  it('the fetchUrl plugin reduces a hostile page to text in linear time', async () => {
    const access = t.app.apps;
    // An unclosed <script> drops the rest of the page in one scan (the lazy regex kept it,
    // after trying to close it from every opening tag).
    expect(await access.runSystemPlugin('fetchUrl', { url: `${pagesBase}/scripts` })).toEqual({ result: '' });
    // A tag holds no '<': `<b<i>` keeps `<b` and drops `<i>` (a tag running on to the next '>'
    // rescanned the rest of the page from every '<').
    const tags = await access.runSystemPlugin('fetchUrl', { url: `${pagesBase}/tags` });
    expect(tags.result).toBe(`kept\na<b c ${'<'.repeat(40_000)}`);
  });
});
