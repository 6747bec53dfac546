/**
 * HTTP to third-party model providers (chat, embeddings, rerank, audio) over node:http(s) with
 * keep-alive agents. Undici's fetch cost ~15% of server CPU on the chat hot path (web streams,
 * AbortSignal plumbing); this keeps the parts of fetch's contract callers rely on: aborts reject
 * with the signal's reason (AbortError / TimeoutError), the signal and timeout cover the body
 * too, redirects are followed, gzip/deflate/br answers are decoded.
 *
 * The URLs come from configuration, never from users (user URLs go through outbound-fetch).
 * A response's body must be read (text/json/buffer/chunks) or discarded, or its socket stays busy.
 */
import http, { type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import https from 'node:https';
import { pipeline, type Readable } from 'node:stream';
import zlib from 'node:zlib';

// Unlimited sockets would match fetch, but a cap keeps a stuck provider from exhausting file
// descriptors; 512 concurrent streams per provider origin is well above what one process runs.
// Idle sockets close after 4 s, before common servers' 5 s keep-alive, so reuse never races a close.
const agentOptions = { keepAlive: true, maxSockets: 512, maxFreeSockets: 64, timeout: 4_000, scheduling: 'lifo' as const };
const agents = { 'http:': new http.Agent(agentOptions), 'https:': new https.Agent(agentOptions) };

const MAX_REDIRECTS = 20;
/** How much of an unread body is drained to keep its socket, and for how long, before destroying it. */
const DRAIN_BYTES = 64 * 1024;
const DRAIN_MS = 1_000;
/**
 * The most of one decoded answer that is read (64 MiB: a batch of 64 embeddings of 3,072
 * dimensions is about 4 MiB as JSON). A provider's compressed answer can inflate a thousandfold,
 * so the decoded bytes are counted, not the wire's.
 */
export const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

/** A provider's answer that is not what its API promises (a body that is not JSON): a 502, never the caller's 400. */
export class ProviderReplyError extends Error {
  override name = 'ProviderReplyError';
}

/** The exchange failed before or while the answer arrived (refused, reset, DNS, bad scheme…). */
export class ConnectionError extends Error {
  override name = 'ConnectionError';
  readonly code?: string;

  constructor(message: string, cause?: Error & { code?: string }) {
    super(message, { cause });
    this.code = cause?.code;
  }
}

export interface ProviderRequestInit {
  method?: string;
  /** Lower-case names. accept, user-agent and accept-encoding default to what fetch sent. */
  headers?: Record<string, string>;
  body?: string | Buffer;
  signal?: AbortSignal;
  /** Covers the whole exchange, body included (as AbortSignal.timeout on fetch did). */
  timeoutMs?: number;
  /** The most decoded bytes read of the answer (MAX_ANSWER_BYTES): beyond it the read fails. */
  maxBytes?: number;
}

export interface ProviderResponse {
  status: number;
  ok: boolean;
  headers: IncomingHttpHeaders;
  /** The decoded body as it arrives. */
  chunks(): AsyncIterable<Buffer>;
  buffer(): Promise<Buffer>;
  text(): Promise<string>;
  json<T = unknown>(): Promise<T>;
  /** Gives the socket back without reading: a short body is drained, anything else destroys it. */
  discard(): void;
}

/**
 * The message the callers' 502s have always carried for a failed exchange: an abort's own
 * message, else fetch's "fetch failed" (the address and error code stay out of client answers).
 */
export function failureReason(error: unknown): string {
  return error instanceof ConnectionError ? 'fetch failed' : (error as Error).message;
}

/** The shortest run of a key's characters that is taken to identify it (a proxy's `sk-abcdefgh…` echo). */
const IDENTIFYING_RUN = 8;
/** How much of an error body is read for its message; error bodies are small, and masking is linear in it. */
const ERROR_TEXT_SCAN = 16 * 1024;

/**
 * `text` with the API key that was sent masked: whole (so `Bearer <key>` too) and any run of
 * IDENTIFYING_RUN or more of its characters (a prefix or suffix a provider echoes). Providers and
 * proxies answer a refused key with bodies like `Incorrect API key provided: Bearer sk-…`.
 */
export function withoutKey(text: string, key: string | undefined): string {
  if (!key) return text;
  if (key.length < IDENTIFYING_RUN) return text.split(key).join('[redacted]');
  const runs = new Set<string>();
  for (let at = 0; at + IDENTIFYING_RUN <= key.length; at++) runs.add(key.slice(at, at + IDENTIFYING_RUN));
  const hidden = new Uint8Array(text.length);
  for (let at = 0; at + IDENTIFYING_RUN <= text.length; at++) {
    if (runs.has(text.slice(at, at + IDENTIFYING_RUN))) hidden.fill(1, at, at + IDENTIFYING_RUN);
  }
  let masked = '';
  for (let at = 0; at < text.length; at++) {
    if (!hidden[at]) masked += text[at];
    else if (!hidden[at - 1]) masked += '[redacted]';
  }
  return masked;
}

/** A provider's error text fit for a message: the key that was sent masked, then cut to `limit` characters. */
export function providerErrorText(text: string, key: string | undefined, limit: number): string {
  return withoutKey(text.slice(0, ERROR_TEXT_SCAN), key).trim().slice(0, limit);
}

export function isAbortError(error: unknown): boolean {
  const name = (error as Error | undefined)?.name;
  return name === 'AbortError' || name === 'TimeoutError';
}

const abortReason = (signal: AbortSignal): Error =>
  signal.reason instanceof Error ? signal.reason : new DOMException('This operation was aborted', 'AbortError');

function decoderFor(encoding: string | undefined): zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress | undefined {
  // Lenient on a truncated end, as fetch is.
  const options = { flush: zlib.constants.Z_SYNC_FLUSH, finishFlush: zlib.constants.Z_SYNC_FLUSH };
  switch (encoding?.trim().toLowerCase()) {
    case 'gzip':
    case 'x-gzip':
      return zlib.createGunzip(options);
    case 'deflate':
      return zlib.createInflate(options);
    case 'br':
      return zlib.createBrotliDecompress({ flush: zlib.constants.BROTLI_OPERATION_FLUSH, finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH });
    default:
      return undefined;
  }
}

/** Drains a little of an unread body (the socket then goes back to the pool), else destroys it. */
function release(stream: Readable): void {
  if (stream.readableEnded || stream.destroyed) return;
  let left = DRAIN_BYTES;
  const timer = setTimeout(() => stream.destroy(), DRAIN_MS).unref();
  stream.on('close', () => clearTimeout(timer));
  stream.on('error', () => {}); // the drained body is of no interest, nor how it ends
  stream.on('data', (chunk: Buffer) => {
    left -= chunk.length;
    if (left < 0) stream.destroy();
  });
  stream.resume();
}

/** The method, body and headers of the request a redirect leads to (the fetch standard's rules). */
function redirected(status: number, from: URL, to: URL, method: string, headers: Record<string, string>, body: string | Buffer | undefined) {
  const next = { method, headers: { ...headers }, body };
  if (status === 303 ? method !== 'HEAD' : (status === 301 || status === 302) && method === 'POST') {
    next.method = 'GET';
    next.body = undefined;
    for (const name of ['content-type', 'content-length', 'content-encoding', 'content-language', 'content-location']) delete next.headers[name];
  }
  if (to.origin !== from.origin) {
    for (const name of ['authorization', 'proxy-authorization', 'cookie', 'host']) delete next.headers[name];
  }
  return next;
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

export async function providerRequest(url: string | URL, init: ProviderRequestInit = {}): Promise<ProviderResponse> {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw new TypeError(`Failed to parse URL from ${url}`);
  }
  const { signal, timeoutMs } = init;
  if (signal?.aborted) throw abortReason(signal);

  let request: http.ClientRequest | undefined;
  let failure: Error | undefined;
  let timer: NodeJS.Timeout | undefined;
  const settle = () => {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  };
  const abort = (reason: Error) => {
    if (failure) return;
    failure = reason;
    settle();
    request?.destroy(reason);
  };
  const onAbort = () => abort(abortReason(signal as AbortSignal));
  signal?.addEventListener('abort', onAbort, { once: true });
  if (timeoutMs !== undefined) {
    timer = setTimeout(() => abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), timeoutMs).unref();
  }

  // No retry on a reset keep-alive socket: the provider may have taken the POST (fetch did not retry either).
  const send = (at: URL, method: string, headers: Record<string, string>, body: string | Buffer | undefined): Promise<IncomingMessage> =>
    new Promise((resolve, reject) => {
      if (failure) return reject(failure);
      const protocol = at.protocol;
      if (protocol !== 'http:' && protocol !== 'https:') return reject(new ConnectionError(`unsupported protocol ${protocol}`));
      const transport = protocol === 'https:' ? https : http;
      const outgoing = transport.request(at, { method, headers, agent: agents[protocol] });
      request = outgoing;
      let answered = false;
      outgoing.on('response', (response) => {
        answered = true;
        resolve(response);
      });
      // Stays attached: a destroy after the answer also emits 'error', and unheard it would crash.
      outgoing.on('error', (error: Error & { code?: string }) => {
        if (!answered) reject(failure ?? new ConnectionError(error.message, error));
      });
      outgoing.end(body);
    });

  try {
    let method = (init.method ?? 'GET').toUpperCase();
    let body = init.body;
    let headers: Record<string, string> = {
      accept: '*/*',
      'user-agent': 'node',
      'accept-encoding': 'gzip, deflate',
      ...init.headers,
      ...(body === undefined ? {} : { 'content-length': String(Buffer.byteLength(body)) }),
    };
    for (let redirects = 0; ; redirects++) {
      const response = await send(target, method, headers, body);
      const location = response.headers.location;
      if (!REDIRECT_STATUSES.has(response.statusCode ?? 0) || location === undefined) return wrap(response, method);
      release(response);
      if (redirects === MAX_REDIRECTS) throw new ConnectionError('redirect count exceeded');
      const next = URL.canParse(location, target.href) ? new URL(location, target) : undefined;
      if (!next) throw new ConnectionError(`invalid redirect location ${location}`);
      ({ method, headers, body } = redirected(response.statusCode as number, target, next, method, headers, body));
      target = next;
    }
  } catch (error) {
    settle();
    throw error;
  }

  function wrap(response: IncomingMessage, method: string): ProviderResponse {
    const status = response.statusCode ?? 0;
    const empty = method === 'HEAD' || status === 204 || status === 304;
    const decoder = empty ? undefined : decoderFor(response.headers['content-encoding']);
    const source: Readable = decoder ? pipeline(response, decoder, () => {}) : response;
    // The signal and the timeout stay armed until the body is read or discarded.
    source.once('end', settle);
    let used = false;
    const maxBytes = init.maxBytes ?? MAX_ANSWER_BYTES;
    let received = 0;
    /** Counts a decoded chunk; past the cap, the error that ends the read. */
    const overCap = (chunk: Buffer): ProviderReplyError | undefined => {
      received += chunk.length;
      return received > maxBytes ? new ProviderReplyError(`The provider at ${target.origin} answered more than ${maxBytes} bytes`) : undefined;
    };
    /**
     * Why a read of the body failed: our own abort or timeout as it is; the provider's answer
     * breaking off (a reset socket reads as `ECONNRESET aborted`, which the error renderer
     * would take for the caller's own upload cut short) is the provider's failure, a 502.
     */
    const readFailure = (error: Error): Error =>
      failure ?? (error instanceof ProviderReplyError ? error : new ProviderReplyError(`The provider at ${target.origin} broke off its answer: ${error.message}`, { cause: error }));
    /** A body is read once, as with fetch: a second reader is refused. */
    const claimBody = () => {
      if (used) throw new TypeError('Body is unusable: Body has already been read');
      used = true;
    };

    async function* chunks(): AsyncGenerator<Buffer> {
      claimBody();
      let ended = false;
      try {
        // Not destroyed when the reader stops early (e.g. at `[DONE]`): release() may keep the socket.
        for await (const chunk of source.iterator({ destroyOnReturn: false })) {
          const tooLarge = overCap(chunk as Buffer);
          if (tooLarge) throw tooLarge;
          yield chunk as Buffer;
        }
        ended = true;
      } catch (error) {
        throw readFailure(error as Error);
      } finally {
        if (!ended) {
          settle();
          release(source);
        }
      }
    }

    // Events rather than chunks(): a whole JSON answer is the common case, and three layers of
    // async iteration cost more than the rest of reading it.
    async function buffer(): Promise<Buffer> {
      claimBody();
      return new Promise((resolve, reject) => {
        const parts: Buffer[] = [];
        const stop = () => {
          source.off('data', onData);
          source.off('end', onEnd);
          source.off('error', onError);
          source.off('close', onClose);
        };
        const onData = (chunk: Buffer) => {
          const tooLarge = overCap(chunk);
          if (tooLarge) onError(tooLarge);
          else parts.push(chunk);
        };
        const onEnd = () => {
          stop();
          resolve(parts.length === 1 ? parts[0]! : Buffer.concat(parts));
        };
        const onError = (error: Error) => {
          stop();
          settle();
          release(source);
          reject(readFailure(error));
        };
        const onClose = () => {
          if (!source.readableEnded) onError(Object.assign(new Error('Premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' }));
        };
        source.on('data', onData);
        source.on('end', onEnd);
        source.on('error', onError);
        source.on('close', onClose);
      });
    }

    async function text(): Promise<string> {
      // fetch's text() decodes UTF-8 and drops a byte-order mark.
      return (await buffer()).toString('utf8').replace(/^\uFEFF/, '');
    }

    return {
      status,
      ok: status >= 200 && status < 300,
      headers: response.headers,
      chunks,
      buffer,
      text,
      json: async <T>() => {
        const body = await text();
        try {
          return JSON.parse(body) as T;
        } catch {
          throw new ProviderReplyError(`The provider at ${target.origin} answered HTTP ${status} with a body that is not JSON`);
        }
      },
      discard() {
        if (used) return;
        used = true;
        settle();
        release(source);
      },
    };
  }
}
