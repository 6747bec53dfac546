import formbody from '@fastify/formbody';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { ClusterErrors } from '../../infra/errors.js';
import { sourceIP } from '../auth/authenticate.js';
import { FORM_PROBLEM, type ParsedForm, parseGoForm } from './form-body.js';
import { logoutRedirectLocation } from './logout-redirect.js';
import { logoutQuerySchema, tokenRequestSchema, tokenResponseSchema } from './oauth.schema.js';

const FORM = 'application/x-www-form-urlencoded';

/** /oauth/token (form-urlencoded only) and /oauth/logout. */
export default async function oauthRoutes(app: FastifyInstance): Promise<void> {
  // Only form bodies here: JSON, multipart and unknown types get 415 (the reference refuses JSON).
  app.removeAllContentTypeParsers();
  await app.register(formbody, { parser: parseGoForm });

  const routes = app.withTypeProvider<ZodTypeProvider>();
  routes.post(
    '/oauth/token',
    {
      schema: {
        summary: 'Issue tokens (password or refresh_token grant)',
        tags: ['cluster oauth'],
        consumes: [FORM],
        body: tokenRequestSchema,
        response: { 200: tokenResponseSchema },
      },
      // A request without a body is a form without fields: the grant checks name what is missing.
      preValidation: async (request) => {
        request.body ??= {} as typeof request.body;
        const problem = (request.body as ParsedForm)[FORM_PROBLEM];
        if (problem) throw ClusterErrors.oauthMalformedForm(problem);
      },
    },
    async (request) =>
      app.cluster.oauth.token(request.body, { sourceIP: sourceIP(request), userAgent: request.headers['user-agent'] ?? '', clientAddress: request.ip }),
  );

  app.route({
    method: ['GET', 'PUT', 'PATCH', 'DELETE'],
    url: '/oauth/token',
    handler: async () => {
      throw ClusterErrors.oauthMethodNotAllowed();
    },
  });

  routes.get(
    '/oauth/logout',
    {
      // It revokes: a HEAD (link checkers, probes) must not run it.
      exposeHeadRoute: false,
      schema: { summary: "End every session of the caller's account", tags: ['cluster oauth'], security: [{ clusterBearer: [] }], querystring: logoutQuerySchema },
    },
    async (request, reply) => {
      const query = request.query;
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
