import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { safeFetch } from '../../infra/outbound-fetch.js';
import { registerChannelRoutes } from './channels/channel.routes.js';
import { createOutLinksRepo, OUTLINK_INDEXES } from './outlinks.repo.js';
import { registerOutLinkRoutes } from './outlinks.routes.js';
import { createOutLinkService, type OutLinkService } from './outlinks.service.js';

declare module 'fastify' {
  interface FastifyInstance {
    outlinks: OutLinkService;
  }
}

/** Share links (`app.outlinks`) and their `outLink` credential. */
export const outlinksServices = fp(
  async function outlinksServices(app: FastifyInstance): Promise<void> {
    const outbound: typeof safeFetch = (url, options = {}) =>
      safeFetch(url, { allowPrivate: app.config.SSRF_ALLOW_PRIVATE, timeoutMs: app.config.OUTBOUND_TIMEOUT_MS, maxBytes: app.config.OUTBOUND_MAX_BYTES, ...options });
    const repo = createOutLinksRepo(app.mongo.db);
    app.apps.onAppsDeleted((teamId, appIds) => repo.deleteByApps(teamId, appIds));
    const outLinks = createOutLinkService({
      repo,
      apps: app.apps,
      now: () => app.identity.clock.now(),
      memberContext: app.identity.memberContext,
      fetch: outbound,
    });
    app.decorate('outlinks', outLinks);
    app.platformAuth.registerResolver('outLink', outLinks.resolver);
    app.startup.add('indexes: share links', () => app.mongo.ensureIndexes(OUTLINK_INDEXES));
  },
  { name: 'platform-outlinks', dependencies: ['platform-identity', 'platform-apps'] },
);

/** Share-link management and the messaging channels' callbacks (which run chats). */
export async function outlinksRoutes(api: FastifyInstance): Promise<void> {
  registerOutLinkRoutes(api, api.outlinks);
  registerChannelRoutes(api, api.chat);
}
