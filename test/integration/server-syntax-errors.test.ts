/**
 * A SyntaxError is the client's mistake only when a body parser met it (Fastify marks a parser's
 * error 400). One thrown while the service reads what it stored itself (a damaged node, search
 * snapshot or journal entry) is a 500 with the request id and an error line, like any other bug:
 * it used to be a 400 echoing the parser's text, logged at info.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, cli, fixture, login } from '../fixtures/cluster/helpers.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { authHeaders, createUser, login as platformLogin } from '../helpers/platform.js';

let t: TestApp;
let token: string;

beforeAll(async () => {
  // Node lists read the stored documents on each request (no in-process index to hide the damage).
  t = await buildTestApp({ CLUSTER_NODE_QUERY: 'database' });
  await cli(t.app, ['nodes', 'import', fixture('nodes.json')]);
  await createUser(t, { username: 'syntax-user', password: 'password-s1' });
  token = await platformLogin(t, 'syntax-user', 'password-s1');
});

afterAll(async () => {
  await t?.close();
});

/** The log lines of one request, parsed. */
const linesOf = (requestId: string) =>
  t
    .logs()
    .split('\n')
    .filter((line) => line.includes(requestId))
    .map((line) => JSON.parse(line) as Record<string, unknown>);

describe("the server's own SyntaxError", () => {
  it('a damaged stored node is a 500 carrying the request id, logged at error; the parser text is not sent', async () => {
    await t.app.mongo.db.collection<{ _id: string }>('cluster_nodes').updateOne({ _id: 'worker1' }, { $set: { json: '{"metadata":' } });
    const auth = bearer((await login(t.app)).access_token);
    const res = await t.app.inject({ method: 'GET', url: '/kapis/resources.platform.io/v1alpha3/nodes', headers: auth });
    const requestId = res.headers['x-request-id'] as string;
    expect(res.statusCode, res.body).toBe(500);
    expect(res.json()).toMatchObject({ kind: 'Status', status: 'Failure', reason: 'InternalError', code: 500, message: `Internal error (request id ${requestId})` });
    expect(res.body).not.toMatch(/JSON|Unexpected|Invalid request/);
    const logged = linesOf(requestId).find((line) => line.msg === 'unexpected error');
    expect(logged).toMatchObject({ level: 50, err: { type: 'SyntaxError' } });
  });
});

describe("a client's malformed body stays a 400", () => {
  it('JSON on a platform route', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/api/core/dataset/list', headers: { ...authHeaders(token), 'content-type': 'application/json' }, payload: '{"parentId":' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ statusText: 'missingParams', message: expect.stringMatching(/^Invalid request body: /) });
  });

  it("JSON on a messaging channel's receiver (its own parser keeps the raw body)", async () => {
    const res = await t.app.inject({ method: 'POST', url: '/api/support/outLink/feishu/nosuchlinktoken1', headers: { 'content-type': 'application/json' }, payload: '{"encrypt":' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ statusText: 'missingParams', message: expect.stringMatching(/^Invalid request body: /) });
  });

  /** An upload whose `metadata` part is `{"a":`, sent with the part's own headers `partHeaders`. */
  const uploadWithBrokenMetadata = (partHeaders: string) => {
    const boundary = '----syntaxerrors';
    const payload = [
      `--${boundary}\r\nContent-Disposition: form-data; name="bucketName"\r\n\r\nchat\r\n`,
      `--${boundary}\r\nContent-Disposition: form-data; name="metadata"${partHeaders}\r\n\r\n{"a":\r\n`,
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\nhello\r\n`,
      `--${boundary}--\r\n`,
    ].join('');
    return t.app.inject({
      method: 'POST',
      url: '/api/common/file/upload',
      headers: { ...authHeaders(token), 'content-type': `multipart/form-data; boundary=${boundary}` },
      payload,
    });
  };

  it('a multipart field sent as JSON that is not JSON', async () => {
    const res = await uploadWithBrokenMetadata('\r\nContent-Type: application/json');
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json()).toMatchObject({ statusText: 'missingParams', message: expect.stringMatching(/^Invalid request body: /) });
  });

  it('a multipart field of JSON text that is not JSON (read by the route)', async () => {
    const res = await uploadWithBrokenMetadata('');
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json()).toMatchObject({ statusText: 'missingParams', message: "Invalid field 'metadata': must be a JSON object" });
  });
});
