import cors from '@fastify/cors';
import helmet from '@fastify/helmet';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

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
    await app.register(helmet, {
      global: true,
      contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
      crossOriginResourcePolicy: { policy: 'cross-origin' },
      referrerPolicy: { policy: 'no-referrer' },
      strictTransportSecurity: config.HSTS_MAX_AGE_SECONDS > 0 ? { maxAge: config.HSTS_MAX_AGE_SECONDS, includeSubDomains: false } : false,
      xFrameOptions: { action: 'deny' },
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
