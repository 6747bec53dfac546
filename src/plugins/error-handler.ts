import type { FastifyError, FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { isDatabaseUnavailable } from '../infra/database-errors.js';
import { Errors } from '../infra/errors.js';
import { errorAnswer } from '../infra/error-render.js';
import { redactUrl } from '../infra/logger.js';
import { clearedSessionCookie } from '../infra/session-cookie.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** An OpenAI-style route: its error bodies also carry OpenAI's `error` object (set by definePlatformRoute). */
    openAiErrors?: boolean;
  }
}

/** The one place where failures become responses, in the body format of the URL's API (logged and rendered by errorAnswer). */
export default fp(
  async function errorHandlerPlugin(app: FastifyInstance) {
    app.setErrorHandler((error: FastifyError, request, reply) => {
      if (isDatabaseUnavailable(error)) app.opsMetrics.databaseError('request', error);
      const { appError, rendered } = errorAnswer(error, request, { openAi: request.routeOptions.config?.openAiErrors === true });
      if (appError.statusText === 'unAuthorization' && rendered.status === 401 && isPlatformApi(request.url)) {
        // As the reference does: a rejected session clears the session cookie (only the platform
        // API's own refusals: /metrics refusing a scrape token must not log a browser out).
        reply.header('set-cookie', clearedSessionCookie(request, app.config.COOKIE_SECURE));
      }
      return reply.code(rendered.status).headers(rendered.headers).send(rendered.body);
    });

    // OpenAI clients probe routes this service does not have (GET /api/v1/models): errorAnswer
    // gives /api/v1/ answers OpenAI's `error`, known route or not.
    app.setNotFoundHandler((request, reply) => {
      const path = request.url.split('?')[0] ?? request.url;
      const { rendered } = errorAnswer(Errors.routeNotFound(request.method, path, redactUrl(path)), request);
      return reply.code(rendered.status).headers(rendered.headers).send(rendered.body);
    });
  },
  { name: 'error-handler' },
);

function isPlatformApi(url: string): boolean {
  return url === '/api' || url.startsWith('/api/') || url.startsWith('/api?');
}
