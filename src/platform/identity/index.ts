import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { accountRoutes } from './account.routes.js';
import identityPlugin from './identity.plugin.js';

/**
 * The identity module of the platform API. Wrapped with fastify-plugin so that its
 * decorations (`platformAuth`, `teamLimits`, `models`) reach the modules registered after it.
 */
export default fp(
  async function identityModule(app: FastifyInstance): Promise<void> {
    await app.register(identityPlugin);
    await app.register(accountRoutes);
  },
  { name: 'platform-identity' },
);
