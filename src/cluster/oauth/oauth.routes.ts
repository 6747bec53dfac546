import formbody from '@fastify/formbody';
import type { FastifyInstance } from 'fastify';
import { AppError } from '../../infra/errors.js';
import { sourceIP } from '../auth/authenticate.js';
import { logoutRedirectLocation } from './logout-redirect.js';
import { logoutQuerySchema, tokenRequestSchema, tokenResponseSchema } from './oauth.schema.js';

const FORM = 'application/x-www-form-urlencoded';

/** /oauth/token (form-urlencoded only) and /oauth/logout. */
export default async function oauthRoutes(app: FastifyInstance): Promise<void> {
  // Only form bodies here: JSON, multipart and unknown types get 415 (the reference refuses JSON).
  app.removeAllContentTypeParsers();
  await app.register(formbody);

  app.post(
    '/oauth/token',
    {
      config: {
        docs: {
          summary: 'Issue tokens (password or refresh_token grant)',
          tags: ['cluster oauth'],
          input: tokenRequestSchema,
          bodyContentType: FORM,
          response: tokenResponseSchema,
          enveloped: false,
        },
      },
    },
    async (request) => {
      const form = tokenRequestSchema.parse(request.body ?? {});
      return app.cluster.oauth.token(form, { sourceIP: sourceIP(request), userAgent: request.headers['user-agent'] ?? '' });
    },
  );

  app.route({
    method: ['GET', 'PUT', 'PATCH', 'DELETE'],
    url: '/oauth/token',
    handler: async () => {
      throw new AppError({ httpStatus: 405, code: 405, statusText: 'methodNotAllowed', message: 'Method Not Allowed', oauthError: 'invalid_request', headers: { allow: 'POST' } });
    },
  });

  app.get(
    '/oauth/logout',
    { config: { docs: { summary: "End every session of the caller's account", tags: ['cluster oauth'], input: logoutQuerySchema, auth: ['clusterBearer'], enveloped: false } } },
    async (request, reply) => {
      const query = logoutQuerySchema.parse(request.query ?? {});
      // Checked before the logout: a refused redirect changes nothing.
      const location = query.post_logout_redirect_uri
        ? logoutRedirectLocation(query.post_logout_redirect_uri, query.state, request, app.config.OAUTH_LOGOUT_REDIRECT_URIS)
        : null;
      await app.cluster.oauth.logout(request.clusterIdentity?.username ?? null);
      if (location) return reply.redirect(location, 302);
      return { message: 'success' };
    },
  );
}
