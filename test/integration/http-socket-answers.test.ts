import { connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildReplica, buildTestApp, type TestApp } from '../helpers/app.js';

/**
 * Answers written before or around the routes, checked on a real port with raw sockets: the HTTP
 * parser's refusals (431, 400) and requests arriving while the process closes (503) come in the
 * URL's error format with the headers every answer carries, not in Fastify's own shape.
 */
let t: TestApp;
let port: number;

beforeAll(async () => {
  t = await buildTestApp();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  port = (t.app.server.address() as AddressInfo).port;
});

afterAll(async () => {
  await t?.close();
});

/** Opens a connection to `to`; `received()` is everything it was sent until it closed. */
function open(to: number): { socket: Socket; received: () => Promise<string> } {
  const socket = connect(to, '127.0.0.1');
  let text = '';
  socket.on('data', (chunk) => {
    text += chunk.toString('utf8');
  });
  const closed = new Promise<string>((resolve) => {
    socket.on('close', () => resolve(text));
    socket.on('error', () => resolve(text));
  });
  return { socket, received: () => closed };
}

/** Sends `request` on a new connection; resolves with the whole answer once the server closed it. */
function raw(request: string | Buffer): Promise<string> {
  const { socket, received } = open(port);
  socket.write(request);
  return received();
}

/** The status, headers (lower-case names) and JSON body of an answer read off a socket. */
function parse(answer: string): { status: number; headers: Record<string, string>; body: Record<string, unknown> } {
  const [head = '', body = ''] = answer.split('\r\n\r\n');
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(body) };
}

function expectAnswerHeaders(headers: Record<string, string>): void {
  expect(headers['content-type']).toBe('application/json; charset=utf-8');
  expect(headers.connection).toBe('close');
  expect(headers['x-content-type-options']).toBe('nosniff');
  expect(headers['content-security-policy']).toBe("default-src 'none';frame-ancestors 'none'");
  expect(headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
}

describe("the HTTP parser's refusals", () => {
  it('headers over the limit on /api: a 431 envelope with the usual headers, logged at info', async () => {
    const answer = parse(await raw(`GET /api/core/app/list HTTP/1.1\r\nHost: x\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`));
    expect(answer.status).toBe(431);
    expectAnswerHeaders(answer.headers);
    expect(answer.headers['cache-control']).toBe('no-store');
    expect(answer.body).toMatchObject({ code: 431, statusText: 'requestHeaderFieldsTooLarge', data: null });
    expect(answer.body.message).toContain('16384 bytes');
    expect(t.logs()).toMatch(/"level":30.*"code":"HPE_HEADER_OVERFLOW".*"path":"\/api\/core\/app\/list".*request refused by the HTTP parser/);
  });

  it('a too long URL under /api/v1 carries the OpenAI error object', async () => {
    const answer = parse(await raw(`POST /api/v1/chat/completions?x=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`));
    expect(answer.status).toBe(431);
    expect(answer.body.error).toMatchObject({ type: 'invalid_request_error', code: 'requestHeaderFieldsTooLarge' });
  });

  it('a malformed request line on /kapis: a 400 Kubernetes Status', async () => {
    const answer = parse(await raw(Buffer.from('GET /kapis/resources.platform.io/v1alpha3/nodes?name=\u4f60 HTTP/1.1\r\nHost: x\r\n\r\n', 'utf8')));
    expect(answer.status).toBe(400);
    expectAnswerHeaders(answer.headers);
    expect(answer.body).toMatchObject({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'BadRequest', code: 400 });
  });

  it('Content-Length with Transfer-Encoding on /oauth/token: OAuth JSON', async () => {
    const request = 'POST /oauth/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n';
    const answer = parse(await raw(request));
    expect(answer.status).toBe(400);
    expectAnswerHeaders(answer.headers);
    expect(answer.body.error).toBe('invalid_request');
    expect(answer.body.error_description).toMatch(/^Invalid HTTP request: /);
  });

  it('an unknown method with an unreadable target: a 400 envelope (the platform format)', async () => {
    const answer = parse(await raw('FO O\r\n\r\n'));
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ code: 507002, statusText: 'missingParams', data: null });
  });
});

describe('a request arriving while the process closes', () => {
  it('is a 503 in its URL format with Retry-After and connection: close, not Fastify’s own body', async () => {
    let started!: () => void;
    let release!: () => void;
    const isStarted = new Promise<void>((resolve) => {
      started = resolve;
    });
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    // A request kept busy holds the close open, as an answer still being written does.
    const { app: replica } = await buildReplica(t, {}, (app) => {
      app.get('/api/zz-slow', async () => {
        started();
        await held;
        return { ok: true };
      });
    });
    await replica.listen({ port: 0, host: '127.0.0.1' });
    const replicaPort = (replica.server.address() as AddressInfo).port;
    const busy = open(replicaPort);
    busy.socket.write('GET /api/zz-slow HTTP/1.1\r\nHost: x\r\n\r\n');
    await isStarted;
    const late = [open(replicaPort), open(replicaPort)];
    late[0]?.socket.write('GET /api/core/app/list HTTP/1.1\r\nHost: x\r\n');
    late[1]?.socket.write('GET /kapis/resources.platform.io/v1alpha3/nodes HTTP/1.1\r\nHost: x\r\n');
    await new Promise((resolve) => setTimeout(resolve, 100));
    const closing = replica.close();
    await new Promise((resolve) => setTimeout(resolve, 20));
    for (const connection of late) connection.socket.write('X-Late: 1\r\n\r\n');
    const [platform, kapis] = await Promise.all(late.map(async (connection) => parse(await connection.received())));
    release();
    await closing;
    expect(await busy.received()).toContain('"ok":true');

    for (const answer of [platform, kapis]) {
      expect(answer?.status).toBe(503);
      expect(answer?.headers['retry-after']).toBe('1');
      expect(answer?.headers.connection).toBe('close');
      expect(answer?.headers['x-content-type-options']).toBe('nosniff');
      expect(answer?.headers['x-request-id']).toBeDefined();
    }
    expect(platform?.body).toMatchObject({ code: 503, statusText: 'serviceUnavailable', data: null });
    expect(kapis?.body).toMatchObject({ kind: 'Status', reason: 'ServiceUnavailable', code: 503 });
  });
});
