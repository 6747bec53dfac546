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
    // Helmet's middleware is built once per configuration (@fastify/helmet built it per request),
    // then applied to each response, 404s and errors included (onRequest runs for them all).
    const global = helmet(options) as HeaderSetter;
    const ofRoute = new WeakMap<HelmetOptions, HeaderSetter>();
    const setterFor = (own: HelmetOptions | undefined): HeaderSetter => {
      if (!own) return global;
      let setter = ofRoute.get(own);
      if (!setter) {
        setter = helmet({ ...options, ...own } as HelmetOptions) as HeaderSetter;
        ofRoute.set(own, setter);
      }
      return setter;
    };
    app.addHook('onRequest', (request, reply, done) => setterFor(request.routeOptions.config.securityHeaders)(request.raw, reply.raw, done));

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
