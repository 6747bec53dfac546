/**
 * Calls one of this service's own routes for a workflow node (relative plugin URLs of FastGPT's
 * templates, relative links of uploaded chat files; see own-service-url.ts). When the server
 * listens, the call goes over loopback to its own address and port, past the SSRF guard for
 * that one address only; before it listens (tests, CLI) it is injected into the same router.
 */

import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { raceAbort } from '../../infra/abort-race.js';
import { Errors } from '../../infra/errors.js';
import type { safeFetch } from '../../infra/outbound-fetch.js';
import { type SelfCallScope, selfCallHeaders } from '../../infra/self-call-token.js';

export interface SelfCall {
  method: string;
  headers?: Record<string, string>;
  body?: string;
  timeoutMs: number;
  maxBytes?: number;
  /**
   * Cuts the call: over the socket its connection is closed; an injected one's request is ended
   * (the route sees it closed, as a hung-up client's) and the caller stops waiting at once.
   */
  signal?: AbortSignal;
}

export interface SelfAnswer {
  status: number;
  body: Buffer;
  contentType?: string;
}

function loopbackOf(address: AddressInfo): string {
  if (address.address === '0.0.0.0') return '127.0.0.1';
  if (address.address === '::') return '::1';
  return address.address;
}

/** What the abort of `signal` rejects with: its reason, as safeFetch's (an AbortError by default). */
const abortReason = (signal: AbortSignal) => (signal.reason instanceof Error ? signal.reason : new DOMException('This operation was aborted', 'AbortError'));

export function createSelfCaller(app: FastifyInstance, outbound: typeof safeFetch) {
  /** `scope`: the run that makes the call (its team, and the chat it saves), which the proof names. */
  return async (path: string, request: SelfCall, scope: SelfCallScope): Promise<SelfAnswer> => {
    const call = { ...request, headers: { ...request.headers, ...selfCallHeaders(app.config.TOKEN_KEY, scope) } };
    const address = app.server.listening ? app.server.address() : null;
    if (address && typeof address === 'object') {
      const host = loopbackOf(address);
      const origin = `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`;
      const response = await outbound(`${origin}${path}`, {
        method: call.method,
        headers: call.headers,
        body: call.body,
        timeoutMs: call.timeoutMs,
        signal: call.signal,
        ...(call.maxBytes ? { maxBytes: call.maxBytes } : {}),
        maxRedirects: 0,
        isAddressAllowed: (candidate) => candidate === host,
      });
      return { status: response.status, body: response.body, contentType: response.headers['content-type'] };
    }
    const response = await raceAbort(
      call.signal,
      () => app.inject({ method: call.method as 'POST', url: path, headers: call.headers, ...(call.body !== undefined ? { payload: call.body } : {}), ...(call.signal ? { signal: call.signal } : {}) }),
      abortReason,
    );
    // The same cap as over the socket (here the answer is already in memory, but callers size by it).
    if (call.maxBytes && response.rawPayload.length > call.maxBytes) throw Errors.badGateway(`The response from this service exceeds ${call.maxBytes} bytes`);
    const contentType = response.headers['content-type'];
    return { status: response.statusCode, body: response.rawPayload, contentType: typeof contentType === 'string' ? contentType : undefined };
  };
}
