import type { Duplex } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { describe, expect, it, vi } from 'vitest';
import { answerClientError } from '../../src/plugins/client-errors.js';

/** The parts of the app the handler uses: the static headers and the log. */
function fakeApp(): FastifyInstance & { info: ReturnType<typeof vi.fn> } {
  const info = vi.fn();
  return { staticSecurityHeaders: () => ({ 'x-content-type-options': 'nosniff' }), log: { info }, info } as unknown as FastifyInstance & { info: typeof info };
}

/** A socket recording what is written to it, in the state a test gives. */
function fakeSocket(state: { destroyed?: boolean; writable?: boolean; inFlight?: { url: string; headersSent: boolean }; writeThrows?: boolean } = {}) {
  const written: string[] = [];
  const socket = {
    destroyed: state.destroyed ?? false,
    writable: state.writable ?? true,
    _httpMessage: state.inFlight ? { headersSent: state.inFlight.headersSent, req: { url: state.inFlight.url } } : null,
    write: vi.fn((data: string) => {
      if (state.writeThrows) throw new Error('write after end');
      written.push(data);
      return true;
    }),
    destroy: vi.fn(),
  };
  return { socket: socket as unknown as Duplex & typeof socket, written };
}

const parserError = (code: string, extra: Record<string, unknown> = {}) => Object.assign(new Error(code), { code, ...extra });

describe('answerClientError', () => {
  it('a body not received in time answers 408 in the format of the request in flight (its URL from Node)', () => {
    const { socket, written } = fakeSocket({ inFlight: { url: '/oauth/token', headersSent: false } });
    answerClientError(fakeApp(), parserError('ERR_HTTP_REQUEST_TIMEOUT'), socket);
    expect(written).toHaveLength(1);
    const [head = '', body = ''] = (written[0] ?? '').split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(head).toContain('x-content-type-options: nosniff\r\n');
    expect(head).toContain('connection: close');
    expect(head).toContain(`content-length: ${Buffer.byteLength(body)}`);
    expect(JSON.parse(body)).toEqual({ error: 'invalid_request', error_description: expect.stringContaining('not received in time') });
    expect(socket.destroy).toHaveBeenCalledOnce();
  });

  it('a malformed body chunk answers in the format of the request it belongs to', () => {
    const { socket, written } = fakeSocket({ inFlight: { url: '/kapis/resources.platform.io/v1alpha3/nodes', headersSent: false } });
    answerClientError(fakeApp(), parserError('HPE_INVALID_CHUNK_SIZE', { reason: 'Invalid character in chunk size', rawPacket: Buffer.from('zz\r\n') }), socket);
    expect(JSON.parse((written[0] ?? '').split('\r\n\r\n')[1] ?? '')).toMatchObject({ kind: 'Status', reason: 'BadRequest', code: 400 });
  });

  it('a timeout before the request line is known answers in the platform format', () => {
    const { socket, written } = fakeSocket();
    answerClientError(fakeApp(), parserError('ERR_HTTP_REQUEST_TIMEOUT'), socket);
    expect(JSON.parse((written[0] ?? '').split('\r\n\r\n')[1] ?? '')).toMatchObject({ code: 408, statusText: 'requestTimeout', data: null });
  });

  it('logs the refusal at info with its reason, as every refusal is, and its path without the query', () => {
    const { socket } = fakeSocket();
    const app = fakeApp();
    const rawPacket = Buffer.from('GET /api/core/app/list?token=secret HTTP/1.1\r\nX: \x01\r\n\r\n');
    answerClientError(app, parserError('HPE_INVALID_HEADER_TOKEN', { reason: 'Invalid header value char', rawPacket }), socket);
    expect(app.info).toHaveBeenCalledWith(
      { reqId: expect.any(String), code: 'HPE_INVALID_HEADER_TOKEN', statusCode: 400, path: '/api/core/app/list', statusText: 'missingParams', reason: 'Invalid HTTP request: Invalid header value char' },
      'request refused by the HTTP parser',
    );
  });

  it('logs a channel receiver’s path with its link token masked, as every logged URL', () => {
    const { socket } = fakeSocket();
    const app = fakeApp();
    const rawPacket = Buffer.from('POST /api/support/outLink/feishu/link-token-secret HTTP/1.1\r\nX: \x01\r\n\r\n');
    answerClientError(app, parserError('HPE_INVALID_HEADER_TOKEN', { reason: 'Invalid header value char', rawPacket }), socket);
    expect(app.info).toHaveBeenCalledWith(expect.objectContaining({ path: '/api/support/outLink/feishu/[redacted]' }), 'request refused by the HTTP parser');
    expect(JSON.stringify(app.info.mock.calls)).not.toContain('link-token-secret');
  });

  it('reads an absolute-form target for the format', () => {
    const { socket, written } = fakeSocket();
    const rawPacket = Buffer.from('GET http://host:8080/kapis/resources.platform.io/v1alpha3/nodes HTTP/1.1\r\nHost: host\r\n\r\n');
    answerClientError(fakeApp(), parserError('HPE_INVALID_HEADER_TOKEN', { reason: 'Invalid header value char', rawPacket }), socket);
    expect(JSON.parse((written[0] ?? '').split('\r\n\r\n')[1] ?? '')).toMatchObject({ kind: 'Status', code: 400, message: 'Invalid HTTP request: Invalid header value char' });
  });

  it('writes nothing on a reset, destroyed or unwritable socket, or once an answer began, and still closes it', () => {
    const cases = [
      { error: parserError('ECONNRESET'), state: {} },
      { error: parserError('HPE_INVALID_METHOD'), state: { destroyed: true } },
      { error: parserError('HPE_INVALID_METHOD'), state: { writable: false } },
      { error: parserError('ERR_HTTP_REQUEST_TIMEOUT'), state: { inFlight: { url: '/api/x', headersSent: true } } },
    ];
    for (const { error, state } of cases) {
      const { socket } = fakeSocket(state);
      answerClientError(fakeApp(), error, socket);
      expect(socket.write).not.toHaveBeenCalled();
      expect(socket.destroy).toHaveBeenCalledOnce();
    }
  });

  it('never throws: a failing write only closes the socket', () => {
    const { socket } = fakeSocket({ writeThrows: true });
    expect(() => answerClientError(fakeApp(), parserError('HPE_HEADER_OVERFLOW'), socket)).not.toThrow();
    expect(socket.destroy).toHaveBeenCalledOnce();
  });
});
