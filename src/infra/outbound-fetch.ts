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
import { AppError, Errors } from './errors.js';

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

const notAllowed = (message: string) => new AppError({ httpStatus: 400, code: 400, statusText: 'urlNotAllowed', message });
const timedOut = (message: string) => new AppError({ httpStatus: 504, code: 504, statusText: 'gatewayTimeout', message });

const blocked = new net.BlockList();
for (const [prefix, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  blocked.addSubnet(prefix, bits, 'ipv4');
}
for (const [prefix, bits] of [
  ['::', 128],
  ['::1', 128],
  ['fe80::', 10],
  ['fec0::', 10],
  ['fc00::', 7],
  ['ff00::', 8],
  ['2001:db8::', 32],
] as const) {
  blocked.addSubnet(prefix, bits, 'ipv6');
}

/** The IPv4 address carried inside an IPv6 one (mapped, compatible, NAT64, 6to4), if any. */
function embeddedIpv4(address: string): string | null {
  const lower = address.toLowerCase();
  const dotted = lower.match(/^(?:::ffff:|::|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/);
  if (dotted?.[1]) return dotted[1];
  const hex = lower.match(/^(?:::ffff:|::|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/);
  const sixToFour = lower.match(/^2002:([0-9a-f]{1,4}):([0-9a-f]{1,4}):/);
  const pair = hex ?? sixToFour;
  if (!pair?.[1] || !pair[2]) return null;
  const high = Number.parseInt(pair[1], 16);
  const low = Number.parseInt(pair[2], 16);
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}

/** True for loopback, private, link-local, CGNAT, multicast, reserved and documentation ranges. */
export function isForbiddenAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = net.isIP(bare);
  if (family === 4) return blocked.check(bare, 'ipv4');
  if (family !== 6) return true;
  const v4 = embeddedIpv4(bare);
  if (v4 && net.isIP(v4) === 4 && blocked.check(v4, 'ipv4')) return true;
  return blocked.check(bare, 'ipv6');
}

class RefusedAddress extends Error {}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

function guardedLookup(allowed: (address: string) => boolean) {
  return (hostname: string, options: dns.LookupOptions, callback: LookupCallback) => {
    dns.lookup(hostname, { all: true, family: options.family ?? 0 }, (error, addresses) => {
      if (error) return callback(error, []);
      const refused = addresses.find((a) => !allowed(a.address));
      if (refused) return callback(new RefusedAddress(`${hostname} resolves to ${refused.address}, which is not allowed`), []);
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
  return new Promise((resolve, reject) => {
    const remaining = deadline - Date.now();
    if (remaining <= 0) return reject(timedOut(`No response from ${url.host} in time`));
    const request = client.request(url, {
      method: options.method ?? 'GET',
      headers: { 'user-agent': 'platform-service', ...options.headers },
      lookup: guardedLookup(allowed) as never,
      timeout: remaining,
    });
    const timer = setTimeout(() => request.destroy(timedOut(`No response from ${url.host} within the timeout`)), remaining);
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
    if (hop >= maxRedirects) throw Errors.badGateway(`Too many redirects from ${rawUrl.slice(0, 200)}`);
    url = parseTarget(new URL(location, url).toString());
    // 303 (and 301/302 after a POST, as browsers do) continue as a body-less GET.
    if (response.status === 303 || ((response.status === 301 || response.status === 302) && current.method && current.method !== 'GET')) {
      current = { ...current, method: 'GET', body: undefined };
    }
  }
}
