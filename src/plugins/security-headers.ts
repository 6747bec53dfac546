import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import helmet, { type HelmetOptions } from 'helmet';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Helmet options of this route, over the global ones (the docs page's CSP). */
    securityHeaders?: HelmetOptions;
  }
  interface FastifyInstance {
    /** Sets the security and CORS headers every answer carries (done by a hook on every routed request). */
    applySecurityHeaders(request: FastifyRequest, reply: FastifyReply): void;
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
/** Response headers a cross-origin script may read. */
const EXPOSED_HEADERS = 'x-request-id, retry-after';
/** How long a browser may reuse a preflight's answer (seconds). */
const PREFLIGHT_MAX_AGE = '600';

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
export default fp(
  async function securityHeadersPlugin(app: FastifyInstance) {
    const config = app.config;
    const options: HelmetOptions = {
      contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
      crossOriginResourcePolicy: { policy: 'cross-origin' },
      referrerPolicy: { policy: 'no-referrer' },
      strictTransportSecurity: config.HSTS_MAX_AGE_SECONDS > 0 ? { maxAge: config.HSTS_MAX_AGE_SECONDS, includeSubDomains: false } : false,
      xFrameOptions: { action: 'deny' },
    };
    // `vary: Origin` on every answer: it depends on the Origin sent (caches must not share it).
    const staticHeaders = (helmetOptions: HelmetOptions) => ({ ...helmetHeaders(helmetOptions), vary: 'Origin' });
    const global = staticHeaders(options);
    const ofRoute = new WeakMap<HelmetOptions, Record<string, string>>();
    const headersFor = (own: HelmetOptions | undefined): Record<string, string> => {
      if (!own) return global;
      let headers = ofRoute.get(own);
      if (!headers) {
        headers = staticHeaders({ ...options, ...own } as HelmetOptions);
        ofRoute.set(own, headers);
      }
      return headers;
    };
    const credentialed = new Set(config.CORS_ORIGINS.map((origin) => origin.replace(/\/$/, '')));

    const applySecurityHeaders = (request: FastifyRequest, reply: FastifyReply) => {
      reply.headers(headersFor(request.routeOptions?.config?.securityHeaders));
      const origin = request.headers.origin;
      if (origin) {
        // Only a cross-origin answer needs these (a browser reads them on CORS responses only).
        reply.header('access-control-allow-origin', origin);
        reply.header('access-control-expose-headers', EXPOSED_HEADERS);
        if (credentialed.has(origin)) reply.header('access-control-allow-credentials', 'true');
      }
    };
    // For the answers no hook runs for (the router's refusals, app.ts).
    app.decorate('applySecurityHeaders', applySecurityHeaders);
    app.addHook('onRequest', (request, reply, done) => {
      applySecurityHeaders(request, reply);
      if (request.method !== 'OPTIONS') return done();
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
