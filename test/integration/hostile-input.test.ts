import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { multipart } from '../fixtures/datasets/client.js';
import { login as clusterLogin } from '../fixtures/cluster/helpers.js';
import {
  BODY_FIELD_MUTATIONS,
  deepObject,
  type Field,
  ID_NAME,
  INTERNAL_DETAIL,
  loadOperations,
  type Operation,
  QUERY_FIELD_MUTATIONS,
  queryString,
  sample,
  typesOf,
  toJson,
  UNKNOWN_ID,
} from '../helpers/openapi-inputs.js';
import { ok } from './apps-helpers.js';
import { buildWorld, UNMAPPED, type World, worldGraph, worldId } from '../helpers/world.js';

// Every method+path of openapi/openapi.json gets schema-derived hostile input with real
// credentials, so validation and handlers are reached, not just the 401. Nothing may answer 5xx
// or show internals, and the probes past a documented bound get its refusal (a body over the
// size limit 413, nesting past MAX_INPUT_DEPTH 400). Offenders are collected per area and listed
// together. Durations are not checked here (bench/ measures them).

/** Requests in flight at once (two cores; enough to keep the database busy, not enough to queue). */
const CONCURRENCY = 3;

async function inPool<T>(items: T[], size: number, run: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await run(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(size, items.length) }, worker));
}

/** Areas in the order they run; destructive routes run last inside each area. */
const AREAS: { name: string; prefixes: string[] }[] = [
  { name: 'cluster and infrastructure', prefixes: ['/healthz', '/readyz', '/openapi.json', '/kapis', '/oauth'] },
  { name: 'public, files and system', prefixes: ['/api/common', '/api/system', '/api/fnApi', '/api/plugins'] },
  { name: 'datasets', prefixes: ['/api/core/dataset', '/api/support/user/team/limit', '/api/support/wallet'] },
  { name: 'chat, workflow runs and AI helpers', prefixes: ['/api/core/chat', '/api/v1', '/api/core/ai', '/api/core/workflow'] },
  { name: 'keys, share links, accounts and teams', prefixes: ['/api/support'] },
  { name: 'apps', prefixes: ['/api/core/app', '/api/proApi'] },
];

const DESTRUCTIVE = /\/(del|delete|deleteAll|clearHistories|delHistory|logout|loginout)$/;

/**
 * Routes whose body is multipart (not described by the OpenAPI body): text fields, the file, and
 * which field carries JSON.
 */
interface MultipartForm {
  fields: Record<string, string>;
  file: { name: string; content: Buffer | string; type?: string };
  jsonField?: string;
}
const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201a5f8e9a90000000049454e44ae426082', 'hex');
const MULTIPART: Record<string, (w: World) => MultipartForm> = {
  '/api/common/file/upload': () => ({ fields: { bucketName: 'dataset', metadata: '{"source":"probe"}' }, file: { name: 'probe.txt', content: 'probe text', type: 'text/plain' }, jsonField: 'metadata' }),
  '/api/common/file/uploadImage': () => ({ fields: { type: 'chatImage' }, file: { name: 'probe.png', content: PNG, type: 'image/png' } }),
  '/api/core/dataset/collection/create/localFile': (w) => ({
    fields: { data: JSON.stringify({ datasetId: w.datasets.shared.datasetId }) },
    file: { name: 'probe.txt', content: 'probe text for a collection', type: 'text/plain' },
    jsonField: 'data',
  }),
  '/api/v1/audio/transcriptions': (w) => ({ fields: { data: JSON.stringify({ appId: w.apps.shared.appId, duration: 1 }) }, file: { name: 'recording.mp3', content: 'ID3-probe', type: 'audio/mpeg' }, jsonField: 'data' }),
};

/** Routes that check credentials themselves (so the document lists none): how a real client authenticates. */
const SELF_AUTHENTICATED: Record<string, string[]> = {
  '/api/v1/audio/transcriptions': ['session'],
  '/api/common/file/upload': ['session'],
  '/api/common/file/uploadImage': ['session'],
};

/** Values that take a route past its first checks (beyond what the schema alone gives). */
const BASELINE_EXTRAS: Record<string, (w: World) => Record<string, unknown>> = {
  '/api/v1/chat/completions': () => ({ messages: [{ role: 'user', content: 'probe' }] }),
  '/api/core/chat/chatTest': () => ({ messages: [{ role: 'user', content: 'probe' }], ...graphOnly('probe') }),
  '/api/core/workflow/debug': () => graphOnly('probe'),
  '/api/core/ai/agent/createQuestionGuide': () => ({ messages: [{ role: 'user', content: 'probe' }] }),
  '/api/core/ai/token': () => ({ messages: [{ role: 'user', content: 'probe' }] }),
  '/api/core/chat/item/getSpeech': () => ({ ttsConfig: { type: 'model', model: 'tts-1', voice: 'alloy' }, input: 'probe' }),
  '/api/plugins/TFSwitch/index': () => ({ input: 'aaa', rule: 'a+' }),
  '/api/core/dataset/data/pushData': () => ({ data: [{ q: 'probe question' }] }),
  '/api/core/dataset/training/rebuildEmbedding': () => ({ vectorModel: 'local-lexical-v1' }),
  '/api/core/app/collaborator/update': () => ({ permission: 4 }),
  '/api/proApi/core/app/collaborator/update': () => ({ permission: 4 }),
  '/api/core/app/httpPlugin/update': (w) => ({ appId: w.apps.shared.httpPluginId }),
  '/api/core/app/transitionWorkflow': (w) => ({ appId: w.apps.shared.simpleAppId }),
  '/api/core/chat/inputGuide/create': () => ({ textList: ['probe'] }),
  '/api/core/chat/inputGuide/query': () => ({ searchKey: 'pro' }),
  '/api/core/dataset/searchTest': () => ({ text: 'probe' }),
  '/api/common/tools/urlFetch': () => ({ urlList: ['http://127.0.0.1:9/probe'] }),
  '/oauth/token': () => ({ grant_type: 'password', username: 'admin', password: 'wrong-password', client_id: 'kubesphere', client_secret: 'kubesphere' }),
};

function graphOnly(marker: string) {
  const graph = worldGraph(marker);
  return { nodes: graph.nodes.slice(0, 2), edges: graph.edges };
}

interface Probe {
  label: string;
  options: InjectOptions;
  /** The status a documented bound gives this probe, on every route that takes it. */
  refusedWith?: number;
}

interface Offender {
  area: string;
  line: string;
}

let w: World;
/** The WeChat / WeCom channel callbacks (their spec names and aliases). */
const XML_CALLBACK_PATHS = /\/support\/outLink\/(imB|imC|wecom|offiaccount)\//;

let clusterToken: string;
let channelTokens: Record<string, string>;
const offenders: Offender[] = [];

beforeAll(async () => {
  // A 2 MiB per-caller limit: the probe past it need not send 20 MiB twice.
  w = await buildWorld({ env: { API_BODY_LIMIT_BYTES: String(2 * 1024 * 1024) } });
  clusterToken = (await clusterLogin(w.t.app)).access_token;
  channelTokens = {};
  for (const [channel, type] of [['imA', 'feishu'], ['imB', 'wecom'], ['imC', 'official_account']] as const) {
    channelTokens[channel] = await ok(w.t, w.ownerA.token, 'POST', '/support/outLink/create', {
      appId: w.apps.shared.appId,
      type,
      name: `probe ${type}`,
      app: { apiBaseUrl: 'http://127.0.0.1:9', verificationToken: 'probe-token', CallbackToken: 'probe-token', CallbackEncodingAesKey: 'a'.repeat(43), CorpId: 'probe-corp' },
    });
  }
}, 120_000);

afterAll(async () => {
  await w?.close();
});

/** Headers and extra parameters that authenticate a request the way a real client of the route would. */
function credentials(op: Operation): { headers: Record<string, string>; params: Record<string, unknown> } {
  const kinds = new Set(SELF_AUTHENTICATED[op.path] ?? op.security);
  if (kinds.size === 0) return { headers: {}, params: {} };
  if (kinds.has('session')) return { headers: { token: w.ownerA.token }, params: {} };
  if (kinds.has('apiKey')) return { headers: { authorization: `Bearer ${w.globalKey.key}` }, params: {} };
  if (kinds.has('rootKey')) return { headers: { rootkey: w.t.config.ROOT_KEY as string }, params: {} };
  if (kinds.has('clusterBearer')) return { headers: { authorization: `Bearer ${clusterToken}` }, params: {} };
  if (kinds.has('outLink')) return { headers: {}, params: { shareId: w.apps.shared.shareId, outLinkUid: 'probe-visitor' } };
  // Team-space credentials need TEAM_TOKEN_AUTH_URL; without it the route answers 401 to all.
  return { headers: {}, params: {} };
}

function pathOf(op: Operation): string {
  const channel = op.path.match(/\/(im[ABC])\/\{token\}$/)?.[1];
  return op.path
    .replace('{token}', channel ? channelTokens[channel]! : 'probe')
    .replace('{id}', UNKNOWN_ID)
    .replace('{path}', 'probe/function')
    .replace('{name}', 'probe-node');
}

/** A valid-looking input: required fields from the schema, ids of world resources, extras. */
function baseline(op: Operation): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const field of op.fields) {
    if (field.in === 'path') continue;
    const id = ID_NAME.test(field.name) ? worldId(w, op.path, field.name, 'shared') : UNMAPPED;
    if (id !== UNMAPPED && id !== undefined) values[field.name] = id;
    else if (field.required) values[field.name] = sample(field.schema, field.name);
  }
  return { ...values, ...BASELINE_EXTRAS[op.path]?.(w), ...credentials(op).params };
}

const takesQuery = (op: Operation) => op.method === 'GET' || op.method === 'DELETE';

function send(op: Operation, values: Record<string, unknown>, label: string): Probe {
  const { headers } = credentials(op);
  if (takesQuery(op)) return { label, options: { method: op.method as 'GET', url: `${pathOf(op)}${queryString(values)}`, headers } };
  if (op.bodyType === 'application/x-www-form-urlencoded') {
    return { label, options: { method: op.method as 'POST', url: pathOf(op), headers: { ...headers, 'content-type': op.bodyType }, payload: queryString(values).slice(1) } };
  }
  return { label, options: { method: op.method as 'POST', url: pathOf(op), headers: { ...headers, 'content-type': 'application/json' }, payload: toJson(values) } };
}

function raw(op: Operation, label: string, contentType: string, payload: string | Buffer): Probe {
  return { label, options: { method: op.method as 'POST', url: pathOf(op), headers: { ...credentials(op).headers, 'content-type': contentType }, payload } };
}

/** Body-level hostility for routes that take a body: shape, encoding, size, content type. */
function bodyProbes(op: Operation, base: Record<string, unknown>): Probe[] {
  const json = JSON.stringify(base);
  return [
    raw(op, 'body is a JSON array', 'application/json', '[{"$gt":""}]'),
    raw(op, 'body is a JSON string', 'application/json', '"probe"'),
    raw(op, 'body is null', 'application/json', 'null'),
    raw(op, 'empty JSON body', 'application/json', ''),
    raw(op, 'truncated JSON', 'application/json', json.slice(0, Math.max(1, Math.floor(json.length / 2)))),
    raw(op, 'invalid UTF-8', 'application/json', Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}')])),
    raw(op, 'wrong content type (text/plain)', 'text/plain', json),
    raw(op, 'wrong content type (xml)', 'application/xml', '<probe/>'),
    raw(op, 'multipart without boundary', 'multipart/form-data', json),
    raw(op, '__proto__ and constructor keys', 'application/json', `{"__proto__":{"isRoot":true},"constructor":{"prototype":{"isRoot":true}}${json.length > 2 ? `,${json.slice(1)}` : '}'}`),
    // MAX_INPUT_DEPTH (64) and BODY_LIMIT_BYTES (1 MB) bound the work any route does on a body.
    // The WeChat and WeCom callbacks take at most XML_CALLBACK_BODY_LIMIT (64 KiB) of any body: that one is over it.
    { ...raw(op, 'deeply nested body', 'application/json', toJson({ ...base, probe: deepObject(20_000) })), refusedWith: XML_CALLBACK_PATHS.test(op.path) ? 413 : 400 },
    // v1/chat/completions and v1/embeddings read up to API_BODY_LIMIT_BYTES (2 MiB here) from a caller whose headers prove a key or session.
    { ...raw(op, 'body over the size limit', 'application/json', JSON.stringify({ ...base, probe: 'x'.repeat(['/api/v1/chat/completions', '/api/v1/embeddings'].includes(op.path) ? 2_200_000 : 1_100_000) })), refusedWith: 413 },
  ];
}

function multipartProbes(op: Operation, make: (typeof MULTIPART)[string]): Probe[] {
  const { fields, file, jsonField } = make(w);
  const { headers } = credentials(op);
  const build = (label: string, f: Record<string, string>, part?: typeof file, mangle?: (payload: Buffer, type: string) => [Buffer, string]): Probe => {
    const body = multipart({ ...f, ...Object.fromEntries(Object.entries(credentials(op).params).map(([k, v]) => [k, String(v)])) }, part);
    const [payload, type] = mangle ? mangle(body.payload, body.headers['content-type']) : [body.payload, body.headers['content-type']];
    return { label, options: { method: op.method as 'POST', url: pathOf(op), headers: { ...headers, 'content-type': type }, payload } };
  };
  return [
    build('valid multipart', fields, file),
    build('truncated multipart', fields, file, (p, t) => [p.subarray(0, Math.floor(p.length * 0.8)), t]),
    build('truncated multipart (inside the headers)', fields, file, (p, t) => [p.subarray(0, 30), t]),
    build('multipart without boundary', fields, file, (p) => [p, 'multipart/form-data']),
    build('boundary mismatch', fields, file, (p) => [p, 'multipart/form-data; boundary=nothing-like-it']),
    build('NUL and ../ in the file name', fields, { ...file, name: '../../etc/zz\u0000probe.txt' }),
    build('huge text field', { ...fields, probe: 'x'.repeat(200_000) }, file),
    build('no file part', fields),
    build('two file parts', fields, file, (p, t) => {
      const boundary = t.split('boundary=')[1]!;
      const extra = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="second.txt"\r\nContent-Type: text/plain\r\n\r\nsecond\r\n`);
      return [Buffer.concat([extra, p]), t];
    }),
    raw(op, 'JSON instead of multipart', 'application/json', JSON.stringify({ ...fields, ...credentials(op).params })),
    ...(jsonField ? jsonFieldProbes(jsonField) : []),
  ];

  function jsonFieldProbes(name: string): Probe[] {
    const valid = JSON.parse(fields[name]!) as Record<string, unknown>;
    const withJson = (label: string, text: string) => build(`JSON field ${name}: ${label}`, { ...fields, [name]: text }, file);
    return [
      withJson('keys with . and $', JSON.stringify({ ...valid, 'a.b': 1, $set: { x: 1 }, metadata: { 'a.b': 1, $where: 'sleep(5000)' } })),
      withJson('operator objects as values', JSON.stringify(Object.fromEntries(Object.keys(valid).map((k) => [k, { $gt: '' }])))),
      withJson('NUL bytes', JSON.stringify({ ...valid, name: 'zz\u0000probe', metadata: { 'zz\u0000': 'zz\u0000' } })),
      withJson('not JSON', '{not json'),
      withJson('deeply nested', deepObject(10_000).text),
    ];
  }
}

/** Every probe of one operation. Field-level mutations go through the first method of each transport. */
function probesFor(op: Operation, firstOfTransport: boolean): Probe[] {
  const base = baseline(op);
  const make = MULTIPART[op.path];
  if (make && !takesQuery(op)) return multipartProbes(op, make);
  const probes: Probe[] = [];
  const fields = op.fields.filter((f) => f.in !== 'path');
  if (takesQuery(op) || op.bodyType === 'application/x-www-form-urlencoded') {
    if (firstOfTransport) {
      for (const field of fields) {
        for (const m of QUERY_FIELD_MUTATIONS) {
          if (m.applies(field, typesOf(field.schema))) probes.push(send(op, { ...base, [field.name]: m.value(field) }, `${m.name} in ${field.name}`));
        }
      }
    }
    probes.push({ label: 'invalid percent-encoding', options: { ...send(op, base, '').options, url: `${pathOf(op)}?${fields[0]?.name ?? 'q'}=%zz%E0%A4%A` } });
    if (!takesQuery(op)) probes.push(raw(op, 'JSON instead of a form', 'application/json', JSON.stringify(base)));
  } else {
    if (firstOfTransport) for (const field of fields) probes.push(...fieldProbes(op, base, field));
    probes.push(...bodyProbes(op, base));
  }
  // A destructive route's valid request goes last, so the hostile ones still find the resource.
  const valid = send(op, base, 'baseline');
  return DESTRUCTIVE.test(op.path) ? [...probes, valid] : [valid, ...probes];
}

function fieldProbes(op: Operation, base: Record<string, unknown>, field: Field): Probe[] {
  const types = typesOf(field.schema);
  return BODY_FIELD_MUTATIONS.filter((m) => m.applies(field, types))
    .map((m) => ({ m, value: m.value(field, types) }))
    .filter(({ value }) => value !== Symbol.for('skip'))
    .map(({ m, value }) => send(op, { ...base, [field.name]: value }, `${m.name} in ${field.name}`));
}

function describeRequest(options: InjectOptions): string {
  const payload = options.payload === undefined ? '' : Buffer.isBuffer(options.payload) ? `<${options.payload.length} bytes>` : String(options.payload);
  const short = (text: string) => (text.length > 160 ? `${text.slice(0, 160)}…(${text.length} chars)` : text);
  const type = (options.headers as Record<string, string> | undefined)?.['content-type'];
  return `${options.method} ${short(String(options.url))}${payload ? ` ${type ?? ''} ${short(JSON.stringify(payload))}` : ''}`;
}

async function runProbe(area: string, op: Operation, probe: Probe): Promise<void> {
  const response = await w.t.app.inject(probe.options);
  const text = /json|text|xml|html/.test(String(response.headers['content-type'] ?? '')) ? response.body.slice(0, 100_000) : '';
  const problems: string[] = [];
  if (response.statusCode >= 500) problems.push(`status ${response.statusCode}`);
  if (probe.refusedWith !== undefined && response.statusCode !== probe.refusedWith) problems.push(`status ${response.statusCode}, not ${probe.refusedWith}`);
  const internal = text.match(INTERNAL_DETAIL);
  if (internal) problems.push(`shows internals (${internal[0]})`);
  if (problems.length > 0) {
    offenders.push({ area, line: `${op.method} ${op.path} [${probe.label}]: ${problems.join(', ')} — ${describeRequest(probe.options)} → ${response.statusCode} ${text.slice(0, 200)}` });
  }
}

const operations = loadOperations();

function areaOperations(prefixes: string[], taken: Set<Operation>): Operation[] {
  const mine = operations.filter((op) => !taken.has(op) && prefixes.some((p) => op.path.startsWith(p)));
  for (const op of mine) taken.add(op);
  return [...mine.filter((op) => !DESTRUCTIVE.test(op.path)), ...mine.filter((op) => DESTRUCTIVE.test(op.path))];
}

const taken = new Set<Operation>();
const planned = AREAS.map((area) => ({ ...area, operations: areaOperations(area.prefixes, taken) }));

describe('hostile input on every method and path of openapi.json', () => {
  it('places every operation in an area', () => {
    expect(operations.length).toBeGreaterThan(250);
    expect(operations.filter((op) => !taken.has(op)).map((op) => `${op.method} ${op.path}`)).toEqual([]);
  });

  for (const area of planned) {
    it(`${area.name}: no 5xx, bounds refused, no internals`, async () => {
      const seenTransport = new Set<string>();
      for (const op of area.operations) {
        const transport = `${op.path} ${takesQuery(op) ? 'query' : 'body'}`;
        const probes = probesFor(op, !seenTransport.has(transport));
        seenTransport.add(transport);
        await inPool(probes, CONCURRENCY, (probe) => runProbe(area.name, op, probe));
      }
      const mine = offenders.filter((o) => o.area === area.name).map((o) => o.line);
      expect(mine, `${mine.length} offending requests:\n${mine.join('\n')}`).toEqual([]);
    }, 120_000);
  }
});
