import type { IncomingMessage, ServerResponse } from 'node:http';
import cors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import helmet, { type HelmetOptions } from 'helmet';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Helmet options of this route, over the global ones (the docs page's CSP). */
    securityHeaders?: HelmetOptions;
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
 * a web client there can use the session cookie. Preflights (OPTIONS) are answered on every path.
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
    // Helmet's headers are computed once per configuration (@fastify/helmet ran its middleware on
    // every request) and handed to the reply in one call, so Node writes them in its single pass
    // over the reply's headers; onRequest runs for every response, 404s and errors included.
    const global = helmetHeaders(options);
    const ofRoute = new WeakMap<HelmetOptions, Record<string, string>>();
    const headersFor = (own: HelmetOptions | undefined): Record<string, string> => {
      if (!own) return global;
      let headers = ofRoute.get(own);
      if (!headers) {
        headers = helmetHeaders({ ...options, ...own } as HelmetOptions);
        ofRoute.set(own, headers);
      }
      return headers;
    };
    app.addHook('onRequest', (request, reply, done) => {
      reply.headers(headersFor(request.routeOptions.config.securityHeaders));
      done();
    });

    // The few origins allowed credentials get that header from a hook of their own, added before
    // the CORS plugin's, which answers preflights itself.
    const credentialed = new Set(config.CORS_ORIGINS.map((origin) => origin.replace(/\/$/, '')));
    if (credentialed.size > 0) {
      app.addHook('onRequest', async (request, reply) => {
        if (credentialed.has(request.headers.origin ?? '')) reply.header('access-control-allow-credentials', 'true');
      });
    }
    // Static options: @fastify/cors normalises a delegator's options on every request.
    await app.register(cors, {
      origin: true,
      credentials: false,
      methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
      exposedHeaders: ['x-request-id', 'retry-after'],
      // Any OPTIONS is a preflight: non-browser clients probing with OPTIONS get 204 too.
      strictPreflight: false,
      maxAge: 600,
    });
  },
  { name: 'security-headers' },
);
