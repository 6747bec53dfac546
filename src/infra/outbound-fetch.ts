/**
 * Outbound HTTP for user-supplied URLs (schema URLs, link collections, the fetchUrl plugin),
 * guarded against SSRF: the host is resolved and every address checked before connecting, the
 * connection is pinned to the checked address (no DNS rebinding between check and use), each
 * redirect is checked again, and a deadline and a size cap apply.
 *
 * Errors (AppError): 400 `urlNotAllowed` for a malformed URL, a non-HTTP scheme or a refused
 * address; 502 `badGateway` for DNS/connection failures, too many redirects or a body over the
 * cap; 504 `gatewayTimeout` when the deadline passes.
 */
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import { AppError, Errors } from './errors.js';
import { urlForMessage } from './join-url.js';

export interface SafeFetchOptions {
  timeoutMs?: number;
  maxBytes?: number;
  /** Allow loopback, private and link-local targets (config SSRF_ALLOW_PRIVATE). */
  allowPrivate?: boolean;
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  maxRedirects?: number;
  /** Replaces the address policy (tests use it to allow one loopback address only). */
  isAddressAllowed?: (address: string) => boolean;
  /** Cuts the request (its connection closed): it rejects with the signal's reason (an AbortError by default). */
  signal?: AbortSignal;
}

export interface SafeFetchResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  finalUrl: string;
  text(): string;
}

export const DEFAULT_OUTBOUND_TIMEOUT_MS = 10_000;
export const DEFAULT_OUTBOUND_MAX_BYTES = 5 * 1024 * 1024;

const notAllowed = Errors.urlNotAllowed;
const timedOut = Errors.gatewayTimeout;

/** Global unicast (RFC 4291): IPv6 outside it is reserved, e.g. IPv4-compatible `::a.b.c.d`. */
const IPV6_GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3') as [ipaddr.IPv6, number];

/**
 * True unless the address is ordinary public unicast, as ipaddr.js classifies ranges: loopback,
 * private, link-local, unique-local, carrier-grade NAT, multicast, broadcast, unspecified,
 * reserved and documentation ranges, and the IPv6 forms that carry or translate to an IPv4
 * address (NAT64 rfc6052, rfc6145, 6to4, Teredo) are refused. An IPv4-mapped IPv6 address is
 * judged by the IPv4 address it carries. Anything that is not a plain IP literal is refused.
 */
export function isForbiddenAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  if (!net.isIP(bare)) return true;
  const parsed = ipaddr.parse(bare);
  if (parsed.kind() === 'ipv4') return (parsed as ipaddr.IPv4).range() !== 'unicast';
  const v6 = parsed as ipaddr.IPv6;
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().range() !== 'unicast';
  return v6.range() !== 'unicast' || !v6.match(IPV6_GLOBAL_UNICAST);
}

class RefusedAddress extends Error {}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

function guardedLookup(allowed: (address: string) => boolean) {
  return (hostname: string, options: dns.LookupOptions, callback: LookupCallback) => {
    dns.lookup(hostname, { all: true, family: options.family ?? 0 }, (error, addresses) => {
      if (error) return callback(error, []);
      const refused = addresses.find((a) => !allowed(a.address));
      // The address itself stays out of the message: callers see it, and it would map the
      // internal network's names to addresses for them.
      if (refused) return callback(new RefusedAddress(`${hostname} resolves to an address that is not allowed (private, loopback or reserved)`), []);
      if (options.all) return callback(null, addresses);
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`No address for ${hostname}`), { code: 'ENOTFOUND' }), []);
      callback(null, first.address, first.family);
    });
  };
}

function parseTarget(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw notAllowed(`Invalid URL: ${raw.slice(0, 200)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw notAllowed(`Only http and https URLs are allowed, got ${url.protocol}`);
  if (url.username || url.password) throw notAllowed('URLs with credentials are not allowed');
  return url;
}

function requestOnce(url: URL, options: SafeFetchOptions, allowed: (address: string) => boolean, deadline: number, maxBytes: number): Promise<SafeFetchResponse> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (net.isIP(host) && !allowed(host)) return Promise.reject(notAllowed(`The address ${host} is not allowed`));
  const client = url.protocol === 'https:' ? https : http;
  const { signal } = options;
  const abortReason = () => (signal?.reason instanceof Error ? signal.reason : new DOMException('This operation was aborted', 'AbortError'));
  if (signal?.aborted) return Promise.reject(abortReason());
  return new Promise<SafeFetchResponse>((resolve, reject) => {
    const remaining = deadline - Date.now();
    if (remaining <= 0) return reject(timedOut(`No response from ${url.host} in time`));
    const request = client.request(url, {
      method: options.method ?? 'GET',
      headers: { 'user-agent': 'platform-service', ...options.headers },
      lookup: guardedLookup(allowed) as never,
      // A connection of its own, closed after: the address is checked when a connection opens,
      // and a pooled one (Node's global agent keeps them) may have been opened by a call under
      // a looser policy (the sandbox's, which may reach private hosts) to the same host.
      agent: false,
      timeout: remaining,
    });
    const timer = setTimeout(() => request.destroy(timedOut(`No response from ${url.host} within the timeout`)), remaining);
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortReason());
      request.destroy();
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    request.on('close', () => signal?.removeEventListener('abort', onAbort));
    request.on('timeout', () => request.destroy(timedOut(`No response from ${url.host} within the timeout`)));
    request.on('error', (error) => {
      clearTimeout(timer);
      if (error instanceof AppError) return reject(error);
      if (error instanceof RefusedAddress) return reject(notAllowed(error.message));
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return reject(Errors.badGateway(`Cannot resolve host ${url.hostname}`));
      reject(Errors.badGateway(`Request to ${url.host} failed: ${code ?? error.message}`));
    });
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let tooLarge = false;
      response.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBytes) {
          tooLarge = true;
          clearTimeout(timer);
          reject(Errors.badGateway(`The response from ${url.host} exceeds ${maxBytes} bytes`));
          response.destroy();
          request.destroy();
          return;
        }
        chunks.push(chunk);
      });
      response.on('error', (error) => request.destroy(error));
      response.on('end', () => {
        clearTimeout(timer);
        if (tooLarge) return;
        const headers: Record<string, string> = {};
        for (const [key, value] of Object.entries(response.headers)) if (value !== undefined) headers[key] = Array.isArray(value) ? value.join(', ') : value;
        const body = Buffer.concat(chunks);
        resolve({ status: response.statusCode ?? 0, headers, body, finalUrl: url.toString(), text: () => body.toString('utf8') });
      });
    });
    if (options.body !== undefined) request.write(options.body);
    request.end();
  });
}

/** Headers that describe the request, not who sends it: kept when a redirect leaves the origin. */
const CROSS_ORIGIN_SAFE_HEADERS = new Set(['accept', 'accept-language', 'content-type', 'content-language', 'user-agent', 'cache-control', 'pragma']);

function crossOriginHeaders(headers: Record<string, string>): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) if (CROSS_ORIGIN_SAFE_HEADERS.has(name.toLowerCase())) kept[name] = value;
  return kept;
}

/** Fetches a user-supplied URL with the SSRF guard, following up to `maxRedirects` redirects. */
export async function safeFetch(rawUrl: string, options: SafeFetchOptions = {}): Promise<SafeFetchResponse> {
  const allowed = options.isAddressAllowed ?? ((address: string) => options.allowPrivate === true || !isForbiddenAddress(address));
  const deadline = Date.now() + (options.timeoutMs ?? DEFAULT_OUTBOUND_TIMEOUT_MS);
  const maxBytes = options.maxBytes ?? DEFAULT_OUTBOUND_MAX_BYTES;
  const maxRedirects = options.maxRedirects ?? 5;
  let url = parseTarget(rawUrl);
  let current = options;
  for (let hop = 0; ; hop++) {
    const response = await requestOnce(url, current, allowed, deadline, maxBytes);
    const location = response.headers.location;
    if (![301, 302, 303, 307, 308].includes(response.status) || !location) return response;
    if (hop >= maxRedirects) throw Errors.badGateway(`Too many redirects from ${urlForMessage(rawUrl)}`);
    let resolved: string;
    try {
      resolved = new URL(location, url).toString();
    } catch {
      throw Errors.badGateway(`${urlForMessage(url.toString())} redirected to a malformed address`);
    }
    const next = parseTarget(resolved);
    // Another origin gets none of the headers a workflow or plugin set but the harmless ones:
    // they may carry its credentials (Authorization, an API key header), meant for the first host.
    if (next.origin !== url.origin && current.headers) current = { ...current, headers: crossOriginHeaders(current.headers) };
    url = next;
    // 303 (and 301/302 after a POST, as browsers do) continue as a body-less GET.
    if (response.status === 303 || ((response.status === 301 || response.status === 302) && current.method && current.method !== 'GET')) {
      current = { ...current, method: 'GET', body: undefined };
    }
  }
}
