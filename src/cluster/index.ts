import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import os from 'node:os';
import { startPeriodicTask } from '../infra/backoff.js';
import { GUARDED_KEY_NAMES } from '../infra/input-guard.js';
import type { ClusterIdentity } from './auth/authenticate.js';
import { MovableClock } from './clock.js';
import { CLUSTER_INDEXES, type ClusterServices, createClusterServices, RETIRED_CLUSTER_INDEXES } from './cluster-services.js';
import nodesRoutes from './nodes/nodes.routes.js';
import oauthRoutes from './oauth/oauth.routes.js';

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * The cluster module's services; `cluster.clock` can be moved (tests, incident replays) and
     * `cluster.host.name`, the machine host registration describes, changed before start-up
     * (tests playing replicas on other machines).
     */
    cluster: ClusterServices & { clock: MovableClock; host: { name: string } };
  }
  interface FastifyRequest {
    /** The authenticated cluster account, or null for an anonymous request (cluster routes only). */
    clusterIdentity: ClusterIdentity | null;
  }
}

const CLEANUP_INTERVAL_MS = 5 * 60_000;

/** Routes of the cluster API, all behind the global cluster authentication step. */
async function clusterRoutes(app: FastifyInstance): Promise<void> {
  app.decorateRequest('clusterIdentity', null);
  // The reference authenticates every request, /oauth included: a bad header is a 401 before any handler.
  app.addHook('onRequest', async (request) => {
    // Unknown query keys are ignored; these would be refused by the global input guard (a later
    // hook). Here rather than in a hook of its own: the node page is a hot route.
    const query = request.query as Record<string, unknown>;
    for (const key of GUARDED_KEY_NAMES) if (Object.hasOwn(query, key)) delete query[key];
    const onOAuth = request.url.startsWith('/oauth/');
    request.clusterIdentity = await app.cluster.authenticator.authenticate(request, { allowRefreshToken: onOAuth });
  });
  await app.register(oauthRoutes);
  await app.register(nodesRoutes);
}

/** The cluster API (OAuth token endpoint and node listing), mounted at the root. */
export default fp(
  async function clusterApi(app: FastifyInstance): Promise<void> {
    const clock = new MovableClock();
    const host = { name: os.hostname() };
    const services = createClusterServices({
      db: app.mongo.db,
      config: app.config,
      clock,
      onLoginBlocked: () => app.opsMetrics.loginBlocked('cluster'),
      hostname: () => host.name,
    });
    app.decorate('cluster', { ...services, clock, host });

    app.startup.add('indexes: cluster', async () => {
      await app.mongo.ensureIndexes(CLUSTER_INDEXES);
      await app.mongo.dropRetiredIndexes(RETIRED_CLUSTER_INDEXES);
    });
    app.startup.add('cluster: default admin account', async () => {
      if (await services.ensureDefaultAdmin()) app.log.warn({ username: 'admin' }, 'created the default cluster account; change its password');
    });
    if (app.config.CLUSTER_REGISTER_HOST_NODE) {
      app.startup.add('cluster: register host node', async () => {
        const registration = await services.registerHostNodeOnce();
        if (registration?.created) app.log.info({ node: registration.name }, 'registered this host as a cluster node');
      });
    }
    let cleanup: { stop(): void } | undefined;
    app.startup.add('cluster: cleanup timer', async () => {
      await services.cleanup();
      cleanup = startPeriodicTask({
        name: 'cluster cleanup (tokens, login records, attempts)',
        intervalMs: CLEANUP_INTERVAL_MS,
        task: () => services.cleanup(),
        log: app.log,
        onFailure: (error) => app.opsMetrics.databaseError('cluster-cleanup', error),
      });
    });
    app.addHook('onClose', async () => cleanup?.stop());

    await app.register(clusterRoutes);
  },
  { name: 'cluster', dependencies: ['mongo', 'startup'] },
);
