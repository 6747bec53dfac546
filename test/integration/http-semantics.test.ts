import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { apiKeyHeaders, authHeaders, createApiKey, login } from '../helpers/platform.js';
import { bearer, cli, login as clusterLogin, fixture, postToken } from '../fixtures/cluster/helpers.js';
import { multipart } from '../fixtures/datasets/client.js';
import { createPublishedApp, simpleChatGraph, startChatApp } from './chat-helpers.js';

/**
 * HTTP semantics at the edges of both APIs: HEAD only where it cannot change anything, 405 for
 * another method on the node paths, OpenAI's `error` on unknown v1 routes, compressed bodies
 * refused with 415, and no caching of API answers.
 */
let t: TestApp;
let fake: FakeOpenAi;
let token: string;
let clusterToken: string;

const NODE_PATHS = ['resources.platform.io', 'resources.kubesphere.io'].flatMap((group) => [`/kapis/${group}/v1alpha3/nodes`, `/kapis/${group}/v1alpha3/nodes/master1`]);
const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');

beforeAll(async () => {
  ({ t, fake } = await startChatApp());
  token = await login(t, 'root', 'root-password-1');
  clusterToken = (await clusterLogin(t.app)).access_token;
  await cli(t.app, ['nodes', 'import', fixture('nodes.json')]);
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

const get = (url: string, headers: Record<string, string> = {}) => t.app.inject({ method: 'GET', url, headers });
const head = (url: string, headers: Record<string, string> = {}) => t.app.inject({ method: 'HEAD', url, headers });

async function keyNames(): Promise<string[]> {
  const list = await get('/api/support/openapi/list', authHeaders(token));
  expect(list.statusCode, list.body).toBe(200);
  return (list.json().data as { name: string }[]).map((key) => key.name);
}

async function storedFileUrl(): Promise<string> {
  const body = multipart({ bucketName: 'dataset' }, { name: 'note.txt', content: 'Some stored text.', type: 'text/plain' });
  const upload = await t.app.inject({ method: 'POST', url: '/api/common/file/upload', headers: { ...authHeaders(token), ...body.headers }, payload: body.payload });
  expect(upload.statusCode, upload.body).toBe(200);
  return upload.json().data.previewUrl as string;
}

async function storedImageUrl(): Promise<string> {
  const upload = await t.app.inject({
    method: 'POST',
    url: '/api/common/file/uploadImage',
    headers: authHeaders(token),
    payload: { base64Img: `data:image/png;base64,${PNG.toString('base64')}`, type: 'datasetAvatar' },
  });
  expect(upload.statusCode, upload.body).toBe(200);
  return upload.json().data as string;
}

describe('HEAD never runs a handler that changes something', () => {
  it('HEAD openapi/create creates no key: the 404 of any unserved method', async () => {
    const before = await keyNames();
    const response = await head('/api/support/openapi/create?name=by-head', authHeaders(token));
    expect(response.statusCode).toBe(404);
    expect(await keyNames()).toEqual(before);
    expect(before).not.toContain('by-head');
    // The same answer as another unserved method on a served path.
    const patch = await t.app.inject({ method: 'PATCH', url: '/api/support/openapi/create', headers: authHeaders(token) });
    expect(patch.statusCode).toBe(404);
    expect(patch.json()).toMatchObject({ code: 404, statusText: 'notFound' });
  });

  it('HEAD loginout does not end the session', async () => {
    const session = await login(t, 'root', 'root-password-1');
    expect((await head('/api/support/user/account/loginout', authHeaders(session))).statusCode).toBe(404);
    expect((await get('/api/support/user/account/tokenLogin', authHeaders(session))).statusCode).toBe(200);
  });

  it('HEAD /oauth/logout does not revoke the token', async () => {
    const { access_token } = await clusterLogin(t.app);
    expect((await head('/oauth/logout', bearer(access_token))).statusCode).toBe(404);
    expect((await get(NODE_PATHS[0] as string, bearer(access_token))).statusCode).toBe(200);
  });

  it('HEAD still answers on the content reads (file, image) like their GET, without a body', async () => {
    for (const url of [await storedFileUrl(), await storedImageUrl()]) {
      const [got, headed] = [await get(url), await head(url)];
      expect(got.statusCode, `${url} ${got.body}`).toBe(200);
      expect(headed.statusCode, url).toBe(200);
      expect(headed.body).toBe('');
      expect(headed.headers['content-type']).toBe(got.headers['content-type']);
    }
  });

  it('HEAD still answers on health, documents, metrics and the node reads', async () => {
    for (const url of ['/healthz', '/readyz', '/openapi.json', '/docs', '/metrics']) expect((await head(url)).statusCode, url).toBe(200);
    for (const url of NODE_PATHS) expect((await head(url, bearer(clusterToken))).statusCode, url).toBe(200);
  });
});

describe('another method on the node paths', () => {
  it('is a 405 Status with Allow: GET, HEAD on both groups, list and single node', async () => {
    for (const url of NODE_PATHS) {
      for (const method of ['POST', 'PUT', 'PATCH', 'DELETE'] as const) {
        const response = await t.app.inject({ method, url, headers: bearer(clusterToken) });
        expect(response.statusCode, `${method} ${url}`).toBe(405);
        expect(response.headers.allow).toBe('GET, HEAD');
        expect(response.json()).toMatchObject({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'MethodNotAllowed', code: 405 });
      }
    }
  });
});

describe('an unknown route under /api/v1', () => {
  it("carries OpenAI's error object beside the envelope (other platform paths do not)", async () => {
    const models = await get('/api/v1/models');
    expect(models.statusCode).toBe(404);
    expect(models.json()).toEqual({
      code: 404,
      statusText: 'notFound',
      message: 'Route GET /api/v1/models not found',
      data: null,
      error: { message: 'Route GET /api/v1/models not found', type: 'not_found_error', code: 'notFound' },
    });
    expect((await get('/api/no/such/thing')).json().error).toBeUndefined();
  });
});

describe('a compressed request body', () => {
  const gzipped = (text: string) => gzipSync(text);

  it('is a 415 in the URL format, asking for the body uncompressed (platform, v1, OAuth)', async () => {
    const platform = await t.app.inject({
      method: 'POST',
      url: '/api/core/app/list',
      headers: { ...authHeaders(token), 'content-type': 'application/json', 'content-encoding': 'gzip' },
      payload: gzipped('{"parentId":null}'),
    });
    expect(platform.statusCode).toBe(415);
    expect(platform.headers['accept-encoding']).toBe('identity');
    expect(platform.json()).toMatchObject({ code: 415, statusText: 'unsupportedMediaType', data: null });
    expect(platform.json().message).toBe('Content-Encoding gzip is not supported: send the request body uncompressed');

    const key = await createApiKey(t, token, { name: 'gzip' });
    const v1 = await t.app.inject({
      method: 'POST',
      url: '/api/v1/chat/completions',
      headers: { ...apiKeyHeaders(key), 'content-type': 'application/json', 'content-encoding': 'deflate' },
      payload: gzipped('{"messages":[]}'),
    });
    expect(v1.statusCode).toBe(415);
    expect(v1.json().error).toMatchObject({ type: 'invalid_request_error', message: expect.stringContaining('send the request body uncompressed') });

    const oauth = await t.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-encoding': 'gzip' },
      payload: gzipped('grant_type=password&username=admin'),
    });
    expect(oauth.statusCode).toBe(415);
    expect(oauth.json()).toEqual({ error: 'invalid_request', error_description: 'Content-Encoding gzip is not supported: send the request body uncompressed' });
  });

  it('identity is read as usual', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/core/app/list',
      headers: { ...authHeaders(token), 'content-type': 'application/json', 'content-encoding': 'identity' },
      payload: '{}',
    });
    expect(response.statusCode, response.body).toBe(200);
  });
});

describe('caching of API answers', () => {
  it('API answers are no-store: platform, v1, /oauth/token, and their errors; /kapis (bearer only) sends none', async () => {
    const answers = [
      await get('/api/support/user/account/tokenLogin', authHeaders(token)),
      await get('/api/support/openapi/list', authHeaders(token)),
      await get('/api/no/such/thing'),
      await get('/api/v1/models'),
      await postToken(t.app, { grant_type: 'password', username: 'admin', password: 'P@88w0rd', client_id: 'kubesphere', client_secret: 'kubesphere' }),
    ];
    for (const answer of answers) expect(answer.headers['cache-control'], answer.body.slice(0, 100)).toBe('no-store');
    expect((await get(NODE_PATHS[0] as string, bearer(clusterToken))).headers['cache-control']).toBeUndefined();
  });

  it('routes that set their own keep it: file reads, images, streams; health and metrics are not API answers', async () => {
    expect((await get(await storedFileUrl())).headers['cache-control']).toBe('public, max-age=31536000');
    expect((await get(await storedImageUrl())).headers['cache-control']).toBeUndefined();
    expect((await get('/healthz')).headers['cache-control']).toBeUndefined();
    expect((await get('/metrics')).headers['cache-control']).toBe('no-store');

    const appId = await createPublishedApp(t, token, 'Streams', simpleChatGraph);
    const key = await createApiKey(t, token, { name: 'stream' });
    const stream = await t.app.inject({
      method: 'POST',
      url: '/api/v1/chat/completions',
      headers: apiKeyHeaders(key),
      payload: { appId, chatId: 'cache-stream', stream: true, messages: [{ role: 'user', content: 'hello' }] },
    });
    expect(stream.statusCode, stream.body).toBe(200);
    expect(stream.headers['content-type']).toContain('text/event-stream');
    expect(stream.headers['cache-control']).toBe('no-cache, no-transform');
  });
});
