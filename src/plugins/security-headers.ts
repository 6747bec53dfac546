import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import helmet, { type HelmetOptions } from 'helmet';
import type { AppError } from '../infra/errors.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Helmet options of this route, over the global ones (the docs page's CSP). */
    securityHeaders?: HelmetOptions;
    /** A read of stored content (a file, an image; set by definePlatformRoute's `head`): it sets its own caching. */
    contentRead?: boolean;
  }
  interface FastifyInstance {
    /** Sets the security and CORS headers every answer carries (done by a hook on every routed request). */
    applySecurityHeaders(request: FastifyRequest, reply: FastifyReply): void;
    /** The headers of `url`'s answers that depend on nothing else in the request (for answers written to the socket). */
    staticSecurityHeaders(url: string): Readonly<Record<string, string>>;
  }
}

type HeaderSetter = (request: IncomingMessage, response: ServerResponse, next: (error?: Error) => void) => void;

/**
 * The headers helmet sets for `options`, computed once: with these options they depend on
 * nothing in the request (no CSP nonce). Helmet's middleware is run against a response that only
 * records what it is given.
 */
function helmetHeaders(options: HelmetOptions): Record<string, string> {
  const headers: Record<string, string> = {};
  const recorder = {
    setHeader: (name: string, value: unknown) => {
      headers[name.toLowerCase()] = String(value);
    },
    removeHeader: (name: string) => {
      delete headers[name.toLowerCase()];
    },
  };
  let failure: Error | undefined;
  (helmet(options) as HeaderSetter)({} as IncomingMessage, recorder as unknown as ServerResponse, (error) => {
    failure = error;
  });
  if (failure) throw failure;
  return headers;
}

/** The methods a preflight allows (every method the two APIs serve). */
const PREFLIGHT_METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE';
/** Response headers a cross-origin script may read (openai-node in a browser reads `x-should-retry`: without it, a refused turn ran twice more). */
const EXPOSED_HEADERS = 'x-request-id, retry-after, x-should-retry';
/** How long a browser may reuse a preflight's answer (seconds). */
const PREFLIGHT_MAX_AGE = '600';

/**
 * The platform API's answers (a caller's data, for credentials a cache does not key on: the
 * session cookie, the `token` header) and the OAuth token answers (RFC 6749 §5.1) are never
 * stored by a browser or a shared cache that caches GETs: these paths answer
 * `cache-control: no-store` unless the route sets its own (stored content, streams). `/kapis`
 * takes a bearer token only, whose answers a shared cache may not reuse anyway (RFC 9111 §3.5),
 * so its hot node page sends one header fewer. Health, metrics and the documents keep theirs.
 */
function answersNoStore(url: string): boolean {
  return url.startsWith('/api/') || url.startsWith('/oauth/') || url === '/api' || url.startsWith('/api?');
}

interface HeaderSets {
  /** Every answer's. */
  plain: Record<string, string>;
  /** An API answer's: `plain` and `cache-control: no-store`. */
  noStore: Record<string, string>;
}

/**
 * Headers on every response of both APIs, errors and 404s included.
 *
 * Helmet, tuned for a JSON API: nothing this service answers is a page to render, so the CSP is
 * `default-src 'none'; frame-ancestors 'none'` (a stored file can never run a script on this
 * origin), nosniff, no referrer, no framing. Cross-Origin-Resource-Policy is `cross-origin`:
 * other sites legitimately call the API and embed its images. HSTS only when configured.
 *
 * CORS as FastGPT answers it: any Origin is reflected, WITHOUT credentials (keys and token headers
 * work from any site; a browser sends no cookie). Origins in CORS_ORIGINS also get credentials, so
 * a web client there can use the session cookie. Any OPTIONS is a preflight, answered 204 on every
 * path before authentication (non-browser clients probing with OPTIONS get 204 too).
 *
 * One synchronous onRequest hook does all of it: every request pays for it, so the headers that
 * do not depend on the request are computed once per configuration (helmet's middleware and
 * @fastify/cors ran on every request, merging their options each time) and handed to the reply
 * in one call.
 */
export interface SecurityHeadersOptions {
  /**
   * While true, every request but a preflight is refused with the error it answers (a closing
   * server's 503), once its headers are set. Checked in this plugin's hook so that every request
   * does not pay for one more hook.
   */
  refusal?: () => AppError | undefined;
}

export default fp(
  async function securityHeadersPlugin(app: FastifyInstance, { refusal }: SecurityHeadersOptions) {
    const config = app.config;
    const options: HelmetOptions = {
      contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
      crossOriginResourcePolicy: { policy: 'cross-origin' },
      referrerPolicy: { policy: 'no-referrer' },
      strictTransportSecurity: config.HSTS_MAX_AGE_SECONDS > 0 ? { maxAge: config.HSTS_MAX_AGE_SECONDS, includeSubDomains: false } : false,
      xFrameOptions: { action: 'deny' },
    };
    // `vary: Origin` on every answer: it depends on the Origin sent (caches must not share it).
    const headerSets = (helmetOptions: HelmetOptions): HeaderSets => {
      const plain = { ...helmetHeaders(helmetOptions), vary: 'Origin' };
      return { plain, noStore: { ...plain, 'cache-control': 'no-store' } };
    };
    const global = headerSets(options);
    const ofRoute = new WeakMap<HelmetOptions, HeaderSets>();
    const headersFor = (own: HelmetOptions | undefined): HeaderSets => {
      if (!own) return global;
      let headers = ofRoute.get(own);
      if (!headers) {
        headers = headerSets({ ...options, ...own } as HelmetOptions);
        ofRoute.set(own, headers);
      }
      return headers;
    };
    const credentialed = new Set(config.CORS_ORIGINS.map((origin) => origin.replace(/\/$/, '')));

    const applySecurityHeaders = (request: FastifyRequest, reply: FastifyReply) => {
      const routeConfig = request.routeOptions?.config;
      const sets = headersFor(routeConfig?.securityHeaders);
      reply.headers(routeConfig?.contentRead !== true && answersNoStore(request.url) ? sets.noStore : sets.plain);
      const origin = request.headers.origin;
      if (origin) {
        // Only a cross-origin answer needs these (a browser reads them on CORS responses only).
        reply.header('access-control-allow-origin', origin);
        reply.header('access-control-expose-headers', EXPOSED_HEADERS);
        if (credentialed.has(origin)) reply.header('access-control-allow-credentials', 'true');
      }
    };
    // For the answers no hook runs for (the router's refusals, app.ts; the HTTP parser's, client-errors.ts).
    app.decorate('applySecurityHeaders', applySecurityHeaders);
    app.decorate('staticSecurityHeaders', (url: string) => (answersNoStore(url) ? global.noStore : global.plain));
    app.addHook('onRequest', (request, reply, done) => {
      applySecurityHeaders(request, reply);
      if (request.method !== 'OPTIONS') return done(refusal?.());
      // A preflight is answered here, before any authentication hook or handler runs.
      reply.header('access-control-allow-methods', PREFLIGHT_METHODS);
      reply.header('vary', 'Origin, Access-Control-Request-Headers');
      const asked = request.headers['access-control-request-headers'];
      if (asked !== undefined) reply.header('access-control-allow-headers', asked);
      reply.header('access-control-max-age', PREFLIGHT_MAX_AGE);
      // Safari waits for a body on a 204 without a length.
      reply.code(204).header('content-length', '0').send();
    });
    // So that OPTIONS on any path reaches the hook above rather than the not-found handler.
    app.options('*', { schema: { hide: true } }, (_request, reply) => reply.code(204).send());
  },
  { name: 'security-headers' },
);
