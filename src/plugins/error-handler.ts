import type { FastifyError, FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { describeError, isDatabaseUnavailable } from '../infra/database-errors.js';
import { Errors } from '../infra/errors.js';
import { errorFormatFor, isOpenAiUrl, renderError, toAppError, withOpenAiError } from '../infra/error-render.js';
import { clearedSessionCookie } from '../infra/session-cookie.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** An OpenAI-style route: its error bodies also carry OpenAI's `error` object (set by definePlatformRoute). */
    openAiErrors?: boolean;
  }
}

/** The one place where failures become responses, in the body format of the URL's API. */
export default fp(
  async function errorHandlerPlugin(app: FastifyInstance) {
    app.setErrorHandler((error: FastifyError, request, reply) => {
      const { appError, unexpected } = toAppError(error, request.id);
      if (isDatabaseUnavailable(error)) {
        // One readable line: the driver's error object holds the whole (circular) topology.
        app.opsMetrics.databaseError('request', error);
        request.log.warn({ dbError: describeError(error) }, 'database unavailable: answered 503');
      } else if (unexpected) request.log.error({ err: error }, 'unexpected error');
      else if (appError.httpStatus >= 500) request.log.error({ err: error }, appError.message);
      // `reason`, not `msg`: pino writes the message as `msg` too, and a JSON reader keeps the last.
      else request.log.info({ statusText: appError.statusText, reason: appError.logMessage ?? appError.message }, 'request refused');
      const format = errorFormatFor(request.url);
      const rendered = renderError(appError, format);
      if (appError.statusText === 'unAuthorization' && rendered.status === 401 && format === 'platform' && isPlatformApi(request.url)) {
        // As the reference does: a rejected session clears the session cookie (only the platform
        // API's own refusals: /metrics refusing a scrape token must not log a browser out).
        reply.header('set-cookie', clearedSessionCookie(request, app.config.COOKIE_SECURE));
      }
      const body = request.routeOptions.config?.openAiErrors === true ? withOpenAiError(rendered.status, rendered.body) : rendered.body;
      return reply.code(rendered.status).headers(rendered.headers).send(body);
    });

    app.setNotFoundHandler((request, reply) => {
      const path = request.url.split('?')[0] ?? request.url;
      const rendered = renderError(Errors.routeNotFound(request.method, path), errorFormatFor(request.url));
      // OpenAI clients probe routes this service does not have (GET /api/v1/models): they read `error`.
      return reply.code(rendered.status).send(isOpenAiUrl(path) ? withOpenAiError(rendered.status, rendered.body) : rendered.body);
    });
  },
  { name: 'error-handler' },
);

function isPlatformApi(url: string): boolean {
  return url === '/api' || url.startsWith('/api/') || url.startsWith('/api?');
}
