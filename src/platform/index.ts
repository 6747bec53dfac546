import cookie from '@fastify/cookie';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { appsRoutes, appsServices } from './apps/index.js';
import { chatRoutes, chatServices } from './chat/index.js';
import { datasetsRoutes, datasetsServices } from './datasets/index.js';
import { identityRoutes, identityServices, teamLimitsServices } from './identity/index.js';
import { openaiRoutes } from './openai/index.js';
import { outlinksRoutes, outlinksServices } from './outlinks/index.js';
import { systemRoutes, systemServices } from './system/index.js';

/**
 * The platform's services, decorated on the root instance (`app.identity`, `app.platformAuth`,
 * `app.teamLimits`, `app.models`, `app.apps`, `app.datasets`, `app.outlinks`, `app.chat`), so
 * tests use them directly (the CLI builds its own on its connection; benchmarks go through HTTP and
 * the CLI). Each declares what it depends on.
 */
export const platformServices = fp(
  async function platformServices(app: FastifyInstance): Promise<void> {
    await app.register(identityServices);
    await app.register(teamLimitsServices);
    await app.register(systemServices);
    await app.register(appsServices);
    await app.register(datasetsServices);
    await app.register(outlinksServices);
    await app.register(chatServices);
  },
  { name: 'platform-services' },
);

/** The application platform API's routes, mounted at /api; each module's routes in their own context. */
export async function platformRoutes(api: FastifyInstance): Promise<void> {
  // Only this API has a session cookie: the cluster API, probes and metrics skip its parsing hooks.
  await api.register(cookie);
  await api.register(identityRoutes);
  await api.register(systemRoutes);
  await api.register(appsRoutes);
  await api.register(datasetsRoutes);
  await api.register(chatRoutes);
  await api.register(outlinksRoutes);
  await api.register(openaiRoutes);
}
