import { randomUUID } from 'node:crypto';
import { maxHeaderSize, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { type AppError, Errors } from '../infra/errors.js';
import { errorAnswer, type RenderedError } from '../infra/error-render.js';
import { redactUrl } from '../infra/logger.js';

/** What Node's HTTP parser hands to `clientError`. */
interface ClientError extends Error {
  code?: string;
  /** llhttp's words for what is wrong (e.g. "Invalid method encountered"); no request bytes. */
  reason?: string;
  /** The bytes the parser was given when it failed: they start with the request line when it fitted in them. */
  rawPacket?: Buffer;
}

/** Node's socket fields for the request being received (a request timed out after its headers). */
interface HttpSocket extends Duplex {
  _httpMessage?: { headersSent?: boolean; req?: { url?: string } } | null;
}

/** The target of a request line (`GET /kapis/... HTTP/1.1`): an origin-form path, or the path of an absolute form. */
const REQUEST_LINE = /^[!-~]{1,32} (?:[a-z][a-z0-9+.-]*:\/\/[^/ \r\n]*)?(\/[^ \r\n]*)/i;

/**
 * The URL of the refused request when it can be read (null otherwise: its answer is then in the
 * platform's format): from the request line the packet starts with, or, for a body that failed
 * or timed out once its headers were read, from the request Node is receiving.
 */
function refusedUrl(error: ClientError, socket: HttpSocket): string | null {
  // The request line is at most what fits before the parser's header limit; latin1 reads any byte.
  const head = error.rawPacket?.toString('latin1', 0, Math.min(error.rawPacket.length, maxHeaderSize));
  const fromRequestLine = head === undefined ? undefined : REQUEST_LINE.exec(head)?.[1];
  return fromRequestLine ?? socket._httpMessage?.req?.url ?? null;
}

function appErrorOf(error: ClientError): AppError {
  switch (error.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return Errors.requestTimeout('The request was not received in time: send its headers and body without pausing');
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return Errors.payloadTooLarge('Invalid HTTP request: its chunk extensions are too large');
    case 'HPE_HEADER_OVERFLOW':
      return Errors.headersTooLarge(`The request line and headers together must stay under ${maxHeaderSize} bytes (a long URL or a large cookie?)`);
    default:
      return Errors.missingParams(`Invalid HTTP request: ${error.reason ?? error.code ?? 'it could not be parsed'}`);
  }
}

/** The whole answer, as bytes for the socket: the URL's error body and the headers every answer carries. */
function answerOf(app: FastifyInstance, rendered: RenderedError, url: string, requestId: string): string {
  const body = JSON.stringify(rendered.body);
  const headers: Record<string, string> = {
    ...app.staticSecurityHeaders(url),
    ...rendered.headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(body)),
    'x-request-id': requestId,
    connection: 'close',
  };
  let head = `HTTP/1.1 ${rendered.status} ${STATUS_CODES[rendered.status] ?? 'Error'}\r\n`;
  for (const [name, value] of Object.entries(headers)) head += `${name}: ${value}\r\n`;
  return `${head}\r\n${body}`;
}

/**
 * Fastify's `clientErrorHandler`: a request Node's HTTP parser refused (headers over its limit,
 * a malformed request line or header, Content-Length with Transfer-Encoding, a request not
 * received within REQUEST_TIMEOUT_MS) is answered in the error format of its URL, as every other
 * error is, rather than in Fastify's own shape, and logged at info (Fastify logs it at trace).
 * The connection is then closed, as Fastify does: what follows on it cannot be trusted. Nothing
 * here may throw (it runs on the server's `clientError` event).
 */
export function answerClientError(app: FastifyInstance, parserError: Error, connection: Duplex): void {
  // Fastify types `rawPacket` as JSON's view of a Buffer; Node gives the Buffer.
  const error = parserError as ClientError;
  const socket = connection as HttpSocket;
  try {
    // A reset connection has no one to answer; an answer already begun cannot be replaced.
    const answerable = error.code !== 'ECONNRESET' && !socket.destroyed && socket.writable && socket._httpMessage?.headersSent !== true;
    if (answerable) {
      const appError = appErrorOf(error);
      const url = refusedUrl(error, socket) ?? '/';
      const requestId = randomUUID();
      // The path only (a query may carry a token: signed file links), a channel link's token masked, as every logged URL.
      const fields = { reqId: requestId, code: error.code, statusCode: appError.httpStatus, path: redactUrl(url.split('?')[0] ?? '') };
      const { rendered } = errorAnswer(appError, { id: requestId, url, log: app.log }, { refused: 'request refused by the HTTP parser', fields });
      socket.write(answerOf(app, rendered, url, requestId));
    }
  } catch {
    // Nothing more can be done for this connection than closing it.
  }
  socket.destroy();
}
