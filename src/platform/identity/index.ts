import type { FastifyInstance } from 'fastify';
import { accountRoutes } from './account.routes.js';
import { apiKeyRoutes } from './api-keys.routes.js';
import { teamRoutes } from './team.routes.js';

export { default as identityServices } from './identity.plugin.js';
export { default as teamLimitsServices } from './team-limits.plugin.js';

/** The identity module's routes (users, teams, sessions, keys, limits, limits), under /api. */
export async function identityRoutes(api: FastifyInstance): Promise<void> {
  await api.register(accountRoutes);
  await api.register(apiKeyRoutes);
  await api.register(teamRoutes);
}
