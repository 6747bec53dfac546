import fastifySwagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** Where the served OpenAPI document lives; the page fetches it by URL, whoever produces it. */
const DOCUMENT_URL = '/openapi.json';

/**
 * The page's own Content-Security-Policy: scripts from this origin only, styles and images from
 * this origin (the logo is a data: URI; swagger-ui also sets an inline style, which cannot run
 * code), fetches to this origin only (the document, "try it out"), no framing. Everything else
 * keeps the API's `default-src 'none'`.
 */
const DOCS_CSP = {
  useDefaults: false,
  directives: {
    defaultSrc: ["'none'"],
    scriptSrc: ["'self'"],
    styleSrc: ["'self'", "'unsafe-inline'"],
    imgSrc: ["'self'", 'data:'],
    fontSrc: ["'self'", 'data:'],
    connectSrc: ["'self'"],
    baseUri: ["'self'"],
    formAction: ["'self'"],
    objectSrc: ["'none'"],
    frameAncestors: ["'none'"],
  },
};

/** swagger-ui asks its own `/docs/json` (and `/yaml`, which JSON satisfies): send it to the document. */
async function toServedDocument(request: FastifyRequest, reply: FastifyReply) {
  const url = request.routeOptions.url ?? '';
  if (url.endsWith('/json') || url.endsWith('/yaml')) return reply.redirect(DOCUMENT_URL, 302);
}

/**
 * Swagger UI at `/docs` over the served OpenAPI document. Encapsulated (not fastify-plugin): the
 * page's CSP and swagger-ui's internals stay inside this scope.
 */
export default async function docsPlugin(app: FastifyInstance) {
  // The security headers read a route's `config.securityHeaders` (plugins/security-headers.ts):
  // every docs route gets the page CSP.
  const pageHeaders = { contentSecurityPolicy: DOCS_CSP };
  app.addHook('onRoute', (route) => {
    route.config = { ...(route.config ?? {}), securityHeaders: pageHeaders } as typeof route.config;
  });
  // swagger-ui requires @fastify/swagger. When the document is produced another way, a static
  // stand-in satisfies it here; its content is never served (see toServedDocument).
  if (!app.hasPlugin('@fastify/swagger')) {
    await app.register(fastifySwagger, {
      mode: 'static',
      specification: { document: { openapi: '3.0.3', info: { title: 'See /openapi.json', version: '1' }, paths: {} } },
    });
  }
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    staticCSP: false,
    validatorUrl: false,
    uiConfig: { deepLinking: true, docExpansion: 'list', defaultModelsExpandDepth: 0, tryItOutEnabled: false },
    uiHooks: { onRequest: toServedDocument },
    theme: { title: 'Platform and cluster API' },
  });
}
