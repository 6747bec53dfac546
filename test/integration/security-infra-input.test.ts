import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { login } from '../helpers/platform.js';
import { createApp, ok } from './apps-helpers.js';

/**
 * Inputs that gave 500 instead of 400 (security review item 12, central parts) and the JSON body
 * rules real clients rely on (an empty JSON body is `{}`). The checks are central: every route of
 * both APIs gets them, so these tests pick the routes the review reported.
 */
let t: TestApp;
let token: string;
let appId: string;
let datasetId: string;
let collectionId: string;

const NUL = '\u0000';
const BOUNDARY = 'TruncatedBoundary42';

beforeAll(async () => {
  t = await buildTestApp({ OUTBOUND_TIMEOUT_MS: '1500' });
  token = await login(t, 'root', 'root-password-1');
  appId = await createApp(t, token, { name: 'Guide app' });
  datasetId = await ok(t, token, 'POST', '/core/dataset/create', { name: 'Notes' });
  collectionId = await ok(t, token, 'POST', '/core/dataset/collection/create', { datasetId, name: 'Virtual', type: 'virtual' });
});

afterAll(async () => {
  await t.close();
});

const post = (url: string, payload: unknown) =>
  t.app.inject({ method: 'POST', url, headers: { token }, payload: payload as Record<string, unknown> });

function expectNulRefusal(response: { statusCode: number; json: () => unknown; body: string }, field: string): void {
  expect(response.statusCode, response.body).toBe(400);
  expect(response.json()).toMatchObject({ code: 507002, statusText: 'missingParams', data: null });
  expect((response.json() as { message: string }).message).toBe(`Invalid field '${field}': must not contain the NUL character (U+0000)`);
}

describe('a NUL character in request strings is a 400 naming the field', () => {
  it('inputGuide/list and inputGuide/query (searchKey, body and query string)', async () => {
    expectNulRefusal(await post('/api/core/chat/inputGuide/list', { appId, searchKey: `a${NUL}b` }), 'searchKey');
    expectNulRefusal(await post('/api/core/chat/inputGuide/query', { appId, searchKey: `a${NUL}b` }), 'searchKey');
    const viaQuery = await t.app.inject({ method: 'GET', url: `/api/core/chat/inputGuide/list?appId=${appId}&searchKey=a%00b`, headers: { token } });
    expectNulRefusal(viaQuery, 'searchKey');
  });

  it('dataset/list (searchKey) and dataset/data/list (searchText)', async () => {
    expectNulRefusal(await post('/api/core/dataset/list', { searchKey: `x${NUL}` }), 'searchKey');
    expectNulRefusal(await post('/api/core/dataset/data/list', { collectionId, pageNum: 1, pageSize: 10, searchText: `${NUL}` }), 'searchText');
  });

  it('names nested fields and keys, and refuses before authentication reads the body', async () => {
    expectNulRefusal(await post('/api/core/dataset/data/list', { collectionId, data: { q: `q${NUL}` } }), 'data.q');
    expectNulRefusal(await post('/api/core/dataset/data/list', { collectionId, list: ['ok', `bad${NUL}`] }), 'list.1');
    expectNulRefusal(await post('/api/core/dataset/data/list', { collectionId, meta: { [`k${NUL}`]: 1 } }), 'meta');
    // Share-link credentials are read from the body before any schema: still a 400, not a 500.
    const shared = await t.app.inject({ method: 'POST', url: '/api/core/chat/inputGuide/query', payload: { appId, searchKey: 'a', shareId: `s${NUL}`, outLinkUid: 'u' } });
    expectNulRefusal(shared, 'shareId');
  });

  it('cluster query strings and form fields: a 400 in the API format', async () => {
    const nodes = await t.app.inject({ method: 'GET', url: '/kapis/resources.platform.io/v1alpha3/nodes?name=a%00b' });
    expect(nodes.statusCode).toBe(400);
    expect(nodes.json()).toMatchObject({ kind: 'Status', reason: 'BadRequest', code: 400, message: "Invalid field 'name': must not contain the NUL character (U+0000)" });
    const grant = await t.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'grant_type=password&client_id=kubesphere&client_secret=kubesphere&username=ad%00min&password=x',
    });
    expect(grant.statusCode).toBe(400);
    expect(grant.json()).toEqual({ error: 'invalid_request', error_description: "Invalid field 'username': must not contain the NUL character (U+0000)" });
  });

  it('a NUL in HTTP Basic credentials is a wrong password, not a crash', async () => {
    const basic = `Basic ${Buffer.from(`ad${NUL}min:P@88w0rd`).toString('base64')}`;
    const response = await t.app.inject({ method: 'GET', url: '/kapis/resources.platform.io/v1alpha3/nodes', headers: { authorization: basic } });
    expect(response.statusCode).toBe(401);
    expect(response.json().message).toBe('Unauthorized: incorrect password');
  });
});

function truncatedMultipart(fields: Record<string, string>): string {
  const parts = Object.entries(fields).map(([name, value]) => `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
  // The file part starts but the body stops in the middle of it: no closing boundary.
  return `${parts.join('')}--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="notes.txt"\r\nContent-Type: text/plain\r\n\r\nhello, this upload was cut sh`;
}

describe('truncated or malformed multipart bodies are a 400 on every upload route', () => {
  const uploads: [string, Record<string, string>, boolean][] = [
    ['/api/common/file/upload', { bucketName: 'dataset' }, true],
    ['/api/common/file/uploadImage', { type: 'chatImage' }, true],
    ['/api/core/dataset/collection/create/localFile', { data: '{}' }, true],
    // Unauthenticated: the share-link form of speech to text.
    ['/api/v1/audio/transcriptions', { data: '{"shareId":"s","outLinkUid":"u"}' }, false],
  ];

  it.each(uploads)('%s', async (url, fields, withSession) => {
    const headers = { 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, ...(withSession ? { token } : {}) };
    const cut = await t.app.inject({ method: 'POST', url, headers, payload: truncatedMultipart(fields) });
    expect(cut.statusCode, cut.body).toBe(400);
    expect(cut.json()).toMatchObject({ code: 507002, statusText: 'missingParams', data: null });
    expect(cut.json().message).toMatch(/^Invalid (request|multipart) body: /);
    const noBoundary = await t.app.inject({ method: 'POST', url, headers: { ...headers, 'content-type': 'multipart/form-data' }, payload: 'not multipart at all' });
    expect(noBoundary.statusCode, noBoundary.body).toBe(400);
    expect(noBoundary.json().message).toBe('Invalid multipart body: Multipart: Boundary not found');
    expect(t.logs()).not.toContain('unexpected error');
  });

  it.each(uploads)('%s: more than 20 text fields, or a field over 1 MiB, is a 400 (never held in memory without bound)', async (url, fields, withSession) => {
    const auth = withSession ? { token } : {};
    const form = (extra: Record<string, string>) => {
      const body = [...Object.entries({ ...fields, ...extra })].map(([name, value]) => `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
      body.push(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="notes.txt"\r\nContent-Type: text/plain\r\n\r\nhello\r\n--${BOUNDARY}--\r\n`);
      return body.join('');
    };
    const headers = { 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, ...auth };
    // The fields before the file, as a flood would send them: refused, not read on.
    const flood = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`pad${i}`, 'x']));
    const many = await t.app.inject({ method: 'POST', url, headers, payload: form(flood) });
    expect(many.statusCode, many.body).toBe(400);
    expect(many.json().message).toMatch(/^Too many form fields: at most 20 /);
    const long = await t.app.inject({ method: 'POST', url, headers, payload: form({ pad: 'y'.repeat(1024 * 1024 + 10) }) });
    expect(long.statusCode, long.body).toBe(400);
    expect(long.json().message).toBe(`Invalid field 'pad': longer than ${1024 * 1024} bytes`);
    expect(t.logs()).not.toContain('unexpected error');
  });

  it('a NUL inside a multipart JSON field is a 400 too', async () => {
    const body = [
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="data"\r\n\r\n{"shareId":"s\\u0000","outLinkUid":"u"}\r\n`,
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.mp3"\r\nContent-Type: audio/mpeg\r\n\r\nID3\r\n--${BOUNDARY}--\r\n`,
    ].join('');
    const response = await t.app.inject({ method: 'POST', url: '/api/v1/audio/transcriptions', headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }, payload: body });
    expectNulRefusal(response, 'data.shareId');
  });
});

describe('JSON bodies', () => {
  it('an empty body with Content-Type: application/json is {} (DELETE core/dataset/delete?id=… as scripts send it)', async () => {
    const doomed = await ok(t, token, 'POST', '/core/dataset/create', { name: 'To delete' });
    const response = await t.app.inject({ method: 'DELETE', url: `/api/core/dataset/delete?id=${doomed}`, headers: { token, 'content-type': 'application/json' }, payload: '' });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toMatchObject({ code: 200, data: null });
    expect(await t.app.mongo.db.collection('datasets').countDocuments({ name: 'To delete' })).toBe(0);
  });

  it('a blank body is {} too; invalid JSON stays a clear 400', async () => {
    const blank = await t.app.inject({ method: 'POST', url: '/api/core/dataset/list', headers: { token, 'content-type': 'application/json' }, payload: '  \n ' });
    expect(blank.statusCode, blank.body).toBe(200);
    const broken = await t.app.inject({ method: 'POST', url: '/api/core/dataset/list', headers: { token, 'content-type': 'application/json' }, payload: '{"parentId":' });
    expect(broken.statusCode).toBe(400);
    expect(broken.json()).toMatchObject({ statusText: 'missingParams', message: "Invalid request body: Body is not valid JSON but content-type is set to 'application/json'" });
    // Valid JSON refused for a poisoning key: the 400 names the key, not "not valid JSON".
    const poison = async (payload: string) => {
      const response = await t.app.inject({ method: 'POST', url: '/api/core/dataset/list', headers: { token, 'content-type': 'application/json' }, payload });
      return { status: response.statusCode, ...response.json() };
    };
    expect(await poison('{"__proto__":{"x":1}}')).toMatchObject({ status: 400, statusText: 'missingParams', message: expect.stringMatching(/^Invalid field '__proto__': the key __proto__/) });
    expect(await poison('{"x":{"constructor":{"prototype":{"isRoot":true}}}}')).toMatchObject({ status: 400, message: expect.stringMatching(/^Invalid field 'x\.constructor': .*constructor holding a prototype/) });
  });

  it('a refusal is logged with its reason in a field of its own (a second `msg` key was dropped by JSON readers)', async () => {
    const refused = await t.app.inject({ method: 'POST', url: '/api/core/dataset/list', headers: { token, 'content-type': 'application/json' }, payload: '{"parentId":"not-an-id"}' });
    expect(refused.statusCode).toBe(400);
    const line = t
      .logs()
      .split('\n')
      .filter((text) => text.includes(refused.headers['x-request-id'] as string) && text.includes('request refused'))
      .map((text) => JSON.parse(text) as Record<string, unknown>)[0];
    expect(line).toMatchObject({ msg: 'request refused', statusText: 'missingParams', reason: refused.json().message });
  });

  it('a __proto__ key in a query string is a 400 naming it on the platform API, and dropped unseen on the cluster API (merged input must not gain a prototype)', async () => {
    const platform = await t.app.inject({ method: 'GET', url: `/api/core/app/detail?appId=${appId}&__proto__=a&__proto__=b`, headers: { token } });
    expect(platform.statusCode, platform.body).toBe(400);
    expect(platform.json()).toMatchObject({ statusText: 'missingParams', message: "Invalid field '__proto__': the key __proto__, and a constructor holding a prototype, are not accepted" });
    // Unknown keys are ignored there (cluster-unknown-params.test.ts): the anonymous caller's 403 is all that is left.
    const cluster = await t.app.inject({ method: 'GET', url: '/kapis/resources.platform.io/v1alpha3/nodes?__proto__=x' });
    expect(cluster.statusCode, cluster.body).toBe(403);
    const plain = await t.app.inject({ method: 'GET', url: `/api/core/app/detail?appId=${appId}`, headers: { token } });
    expect(plain.statusCode, plain.body).toBe(200);
  });
});

describe('the SSRF guard classifies addresses with ipaddr.js ranges (through HTTP)', () => {
  it.each([
    'http://[64:ff9b::808:808]/openapi.json',
    'http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/openapi.json',
    'http://[2002:808:808::1]/openapi.json',
    'http://192.175.48.1/openapi.json',
    'http://[3fff::1]/openapi.json',
  ])('%s is refused before any connection', async (url) => {
    const response = await post('/api/core/app/httpPlugin/getApiSchemaByUrl', { url });
    expect(response.statusCode, response.body).toBe(400);
    expect(response.json()).toMatchObject({ statusText: 'urlNotAllowed' });
  });
});
