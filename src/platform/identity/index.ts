import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import modelsPlugin from '../system/models.plugin.js';
import { systemRoutes } from '../system/system.routes.js';
import { accountRoutes } from './account.routes.js';
import { apiKeyRoutes } from './api-keys.routes.js';
import identityPlugin, { publishPlatformHandles } from './identity.plugin.js';
import teamLimitsPlugin from './team-limits.plugin.js';
import { teamRoutes } from './team.routes.js';

/**
 * The identity module of the platform API (users, teams, sessions, keys, limits, system data).
 * Wrapped with fastify-plugin so that its decorations (`platformAuth`, `teamLimits`, `models`)
 * reach the modules registered after it in the /api context.
 */
export default fp(
  async function identityModule(app: FastifyInstance): Promise<void> {
    await app.register(identityPlugin);
    await app.register(teamLimitsPlugin);
    await app.register(modelsPlugin);
    publishPlatformHandles(app);
    await app.register(accountRoutes);
    await app.register(apiKeyRoutes);
    await app.register(teamRoutes);
    await app.register(systemRoutes);
  },
  { name: 'platform-identity' },
);
