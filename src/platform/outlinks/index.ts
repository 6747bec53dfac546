import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { startPeriodicTask } from '../../infra/backoff.js';
import { safeFetch } from '../../infra/outbound-fetch.js';
import { CHANNEL_EVENT_INDEXES, CHANNEL_EVENT_RETENTION_MS, type ChannelEventsRepo, createChannelEventsRepo } from './channels/channel-events.repo.js';
import { registerChannelRoutes } from './channels/channel.routes.js';
import { CHANNEL_PLACE_INDEXES, type ChannelPlacesRepo, createChannelPlacesRepo } from './channels/channel-places.repo.js';
import { channelTurnsPerLink } from './channels/channel-turn-gate.js';
import { createOutLinksRepo, OUTLINK_INDEXES, RETIRED_OUTLINK_INDEXES } from './outlinks.repo.js';
import { registerOutLinkRoutes } from './outlinks.routes.js';
import { createOutLinkService, type OutLinkService } from './outlinks.service.js';
import { createShareQpmLimiter, OUTLINK_QPM_INDEXES } from './qpm-limiter.js';

const QPM_CLEANUP_MS = 10 * 60_000;

declare module 'fastify' {
  interface FastifyInstance {
    outlinks: OutLinkService;
    /** Messages the channels delivered, each a stored job (one turn per message across replicas, taken over when its process stops). */
    channelEvents: ChannelEventsRepo;
    /** Each link's places: its channel turns running across the deployment (CHANNEL_TURNS_PER_LINK). */
    channelPlaces: ChannelPlacesRepo;
  }
}

/** Share links (`app.outlinks`) and their `outLink` credential. */
export const outlinksServices = fp(
  async function outlinksServices(app: FastifyInstance): Promise<void> {
    const outbound: typeof safeFetch = (url, options = {}) =>
      safeFetch(url, { allowPrivate: app.config.SSRF_ALLOW_PRIVATE, timeoutMs: app.config.OUTBOUND_TIMEOUT_MS, maxBytes: app.config.OUTBOUND_MAX_BYTES, ...options });
    const repo = createOutLinksRepo(app.mongo.db);
    app.apps.onAppsDeleted((teamId, appIds) => repo.deleteByApps(teamId, appIds));
    const qpm = createShareQpmLimiter(app.mongo.db, () => app.identity.clock.now());
    const outLinks = createOutLinkService({
      repo,
      apps: app.apps,
      now: () => app.identity.clock.now(),
      memberContext: app.identity.memberContext,
      fetch: outbound,
      qpm,
    });
    app.decorate('outlinks', outLinks);
    const channelEvents = createChannelEventsRepo(app.mongo.db);
    app.decorate('channelEvents', channelEvents);
    // Epochs of half a lease: a stopped holder's place is free again within a lease of its last renewal.
    const channelPlaces = createChannelPlacesRepo(app.mongo.db, {
      share: channelTurnsPerLink(app.config.CHANNEL_TURNS_MAX, app.config.CHANNEL_TURNS_PER_LINK),
      epochMs: Math.max(1, Math.floor(app.config.CHANNEL_TURN_LEASE_MS / 2)),
    });
    app.decorate('channelPlaces', channelPlaces);
    app.platformAuth.registerResolver('outLink', outLinks.resolver);
    // What a caller through a link spends counts against the link (chat turns and calls outside them).
    app.identity.credentials.onShareLinkUsage((shareId, points) => outLinks.recordUsage(shareId, points));
    app.startup.add('indexes: share links', async () => {
      await app.mongo.ensureIndexes([...OUTLINK_INDEXES, ...OUTLINK_QPM_INDEXES, ...CHANNEL_EVENT_INDEXES, ...CHANNEL_PLACE_INDEXES]);
      await app.mongo.dropRetiredIndexes(RETIRED_OUTLINK_INDEXES);
    });
    const cleanups: { stop(): void }[] = [];
    app.startup.add('share links: QPM slot and channel message cleanup', async () => {
      cleanups.push(
        startPeriodicTask({
          name: 'share-link QPM slot cleanup',
          intervalMs: QPM_CLEANUP_MS,
          task: () => qpm.deleteExpired(),
          log: app.log,
          onFailure: (error) => app.opsMetrics.databaseError('outlink-qpm-cleanup', error),
        }),
        startPeriodicTask({
          name: 'channel message cleanup',
          intervalMs: QPM_CLEANUP_MS,
          task: () => {
            const now = app.identity.clock.now();
            return channelEvents.deleteBefore(new Date(now - CHANNEL_EVENT_RETENTION_MS), new Date(now));
          },
          log: app.log,
          onFailure: (error) => app.opsMetrics.databaseError('outlink-channel-event-cleanup', error),
        }),
        startPeriodicTask({
          name: 'channel place cleanup',
          intervalMs: QPM_CLEANUP_MS,
          task: () => channelPlaces.deleteExpired(app.identity.clock.now()),
          log: app.log,
          onFailure: (error) => app.opsMetrics.databaseError('outlink-channel-place-cleanup', error),
        }),
      );
    });
    app.addHook('onClose', async () => {
      for (const cleanup of cleanups) cleanup.stop();
    });
  },
  { name: 'platform-outlinks', dependencies: ['platform-identity', 'platform-apps'] },
);

/** Share-link management and the messaging channels' callbacks (which run chats). */
export async function outlinksRoutes(api: FastifyInstance): Promise<void> {
  registerOutLinkRoutes(api, api.outlinks);
  registerChannelRoutes(api, api.chat, api.channelEvents, api.channelPlaces);
}
