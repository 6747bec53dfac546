import type { FastifyInstance } from 'fastify';
import { definePlatformRoute } from '../define-route.js';
import { apiKeyCreateSchema, apiKeyDeleteSchema, apiKeyListSchema, apiKeyUpdateSchema } from './api-keys.schema.js';
import { createApiKeysService } from './api-keys.service.js';

const tags = ['API keys'];

/** support/openapi/*: API key management (session only, as the reference). */
export async function apiKeyRoutes(app: FastifyInstance): Promise<void> {
  const service = createApiKeysService({
    keys: app.identity.apiKeys,
    // The apps module's services exist before any route is registered.
    authorizeApp: (auth, appId, required) => app.apps.authorize(auth, appId, required),
    confirmAppWrite: (teamId, appId) => app.apps.confirmDependentWrite(teamId, appId),
    prefix: () => String(app.models.catalog.systemEnv.openapiPrefix || 'fastgpt'),
  });

  definePlatformRoute(app, {
    methods: ['POST', 'GET'],
    url: '/support/openapi/create',
    auth: ['session'],
    input: apiKeyCreateSchema,
    summary: 'Create an API key (global, or bound to an app); the full key is returned only here',
    tags,
    handler: async ({ input, auth }) => service.create(auth, input),
  });

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/support/openapi/list',
    auth: ['session'],
    input: apiKeyListSchema,
    summary: "List API keys (masked): an app's keys with appId, else the team's global keys",
    tags,
    handler: async ({ input, auth }) => service.list(auth, input.appId),
  });

  definePlatformRoute(app, {
    methods: ['PUT', 'GET', 'POST'],
    url: '/support/openapi/update',
    auth: ['session'],
    input: apiKeyUpdateSchema,
    summary: "Rename an API key or replace its limit (expiredTime, maxUsagePoints)",
    tags,
    handler: async ({ input, auth }) => {
      await service.update(auth, input);
      return null;
    },
  });

  definePlatformRoute(app, {
    methods: ['DELETE', 'GET', 'POST'],
    url: '/support/openapi/delete',
    auth: ['session'],
    input: apiKeyDeleteSchema,
    summary: 'Delete an API key',
    tags,
    handler: async ({ input, auth }) => {
      await service.remove(auth, input.id);
      return {};
    },
  });
}
