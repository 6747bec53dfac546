/**
 * Calls one of this service's own `/api/plugins/…` routes for the HTTP node (relative plugin
 * URLs of FastGPT's templates). When the server listens, the call goes over loopback to its own
 * address and port, past the SSRF guard for that one address only; before it listens (tests,
 * CLI) it is injected into the same router.
 */
import type { FastifyInstance } from 'fastify';
import type { AddressInfo } from 'node:net';
import type { safeFetch } from '../../infra/outbound-fetch.js';
import type { HttpCall } from './workflow-nodes/node-deps.js';

function loopbackOf(address: AddressInfo): string {
  if (address.address === '0.0.0.0') return '127.0.0.1';
  if (address.address === '::') return '::1';
  return address.address;
}

export function createSelfCaller(app: FastifyInstance, outbound: typeof safeFetch) {
  return async (path: string, call: Omit<HttpCall, 'url'>): Promise<{ status: number; text: string }> => {
    const address = app.server.listening ? app.server.address() : null;
    if (address && typeof address === 'object') {
      const host = loopbackOf(address);
      const origin = `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`;
      const response = await outbound(`${origin}${path}`, {
        method: call.method,
        headers: call.headers,
        body: call.body,
        timeoutMs: call.timeoutMs,
        maxRedirects: 0,
        isAddressAllowed: (candidate) => candidate === host,
      });
      return { status: response.status, text: response.text() };
    }
    const response = await app.inject({ method: call.method as 'POST', url: path, headers: call.headers, ...(call.body !== undefined ? { payload: call.body } : {}) });
    return { status: response.statusCode, text: response.body };
  };
}
