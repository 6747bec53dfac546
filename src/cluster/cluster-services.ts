import type { Db } from 'mongodb';
import type { Config } from '../config.js';
import { attemptIndexes, createAttemptLimiter } from '../infra/attempt-limiter.js';
import { type IndexDeclaration, runMigrationOnce } from '../infra/mongo.js';
import type { VersionStamps } from '../infra/version-stamps.js';
import { ACCOUNT_INDEXES, createAccountsRepo, RETIRED_ACCOUNT_INDEXES } from './accounts/accounts.repo.js';
import { createAccountsService, LOGIN_LIMITS, LoginFailure } from './accounts/accounts.service.js';
import { createAuthenticator } from './auth/authenticate.js';
import type { Clock } from './clock.js';
import { createNodesRepo, NODE_INDEXES } from './nodes/nodes.repo.js';
import { createNodesService } from './nodes/nodes.service.js';
import { createPodsRepo, POD_INDEXES } from './nodes/pods.repo.js';
import { createOAuthService } from './oauth/oauth.service.js';
import { createTokensRepo, TOKEN_INDEXES } from './oauth/tokens.repo.js';
import { createTokensService } from './oauth/tokens.service.js';
import { CLUSTER_STAMPS, createClusterStamps } from './stamps.js';

const LOGIN_ATTEMPTS = 'cluster_login_attempts';
const HOST_NODE_REGISTRATION = 'cluster-host-node-registration';

export const CLUSTER_INDEXES: readonly IndexDeclaration[] = [...ACCOUNT_INDEXES, ...TOKEN_INDEXES, ...NODE_INDEXES, ...POD_INDEXES, ...attemptIndexes(LOGIN_ATTEMPTS)];
/** Indexes of earlier versions that CLUSTER_INDEXES replace: dropped at start-up once those are built. */
export const RETIRED_CLUSTER_INDEXES: readonly IndexDeclaration[] = [...RETIRED_ACCOUNT_INDEXES];

export const DEFAULT_ADMIN = { username: 'admin', email: 'admin@kubesphere.io' } as const;

/**
 * Builds the cluster module's services from their dependencies (used by the plugin and the CLI).
 * `stamps` defaults to the cluster's own leased stamps (one set per process).
 */
export function createClusterServices(deps: {
  db: Db;
  config: Config;
  clock: Clock;
  stamps?: VersionStamps;
  onLoginBlocked?: () => void;
  /** The name of the machine host registration describes (default its hostname). */
  hostname?: () => string;
}) {
  const { db, config, clock } = deps;
  const stamps = deps.stamps ?? createClusterStamps(db);
  const accountsRepo = createAccountsRepo(db);
  const tokens = createTokensService({ tokens: createTokensRepo(db), clock, secret: config.CLUSTER_JWT_SECRET, stamps });
  const attempts = createAttemptLimiter(db, { collection: LOGIN_ATTEMPTS, maxAttempts: LOGIN_LIMITS.maxFailures, windowMs: LOGIN_LIMITS.windowMs, now: () => clock.now().getTime() });
  // Same collection (keys `ip:ADDRESS`, never a user name), more slots per window.
  const clientAttempts = createAttemptLimiter(db, {
    collection: LOGIN_ATTEMPTS,
    maxAttempts: LOGIN_LIMITS.maxClientFailures,
    windowMs: LOGIN_LIMITS.windowMs,
    now: () => clock.now().getTime(),
  });
  const accountsService = createAccountsService({
    accounts: accountsRepo,
    clock,
    revokeTokens: tokens.revokeAll,
    accountStateChanged: () => stamps.bump(CLUSTER_STAMPS.accounts),
    attempts,
    clientAttempts,
  });
  // A login refused for the attempt limit is counted (metrics), whichever route asked (OAuth, Basic).
  const accounts: typeof accountsService = {
    ...accountsService,
    async login(attempt) {
      try {
        return await accountsService.login(attempt);
      } catch (error) {
        if (error instanceof LoginFailure && error.kind === 'auth rate limit exceeded') deps.onLoginBlocked?.();
        throw error;
      }
    },
  };
  const oauth = createOAuthService({ clients: config.OAUTH_CLIENTS, multipleLogin: config.CLUSTER_MULTIPLE_LOGIN, accounts, tokens });
  const nodes = createNodesService({ nodes: createNodesRepo(db), pods: createPodsRepo(db), clock, stamps, strategy: config.CLUSTER_NODE_QUERY, hostname: deps.hostname });
  const authenticator = createAuthenticator({ accounts, tokens, stamps, clock });

  return {
    clock,
    accounts,
    tokens,
    oauth,
    nodes,
    authenticator,

    /** Creates the default `admin` (uninitialized) unless it exists; true when created. */
    async ensureDefaultAdmin(): Promise<boolean> {
      if (await accounts.findByName(DEFAULT_ADMIN.username)) return false;
      try {
        // The operator chose this password explicitly, so the policy is not applied to it.
        await accounts.create({ ...DEFAULT_ADMIN, password: config.CLUSTER_ADMIN_PASSWORD }, { uninitialized: true, skipPolicy: true });
        return true;
      } catch (error) {
        // Another instance created it at the same moment.
        if (await accounts.findByName(DEFAULT_ADMIN.username)) return false;
        throw error;
      }
    },

    /**
     * Registers this machine as a node at the deployment's first start; null on every later
     * start, of any replica under any hostname (one read). A recreated container or a rolled-out
     * pod has a new hostname, and its node would be Ready for ever with a frozen heartbeat.
     */
    async registerHostNodeOnce(): Promise<{ name: string; created: boolean } | null> {
      let registration: { name: string; created: boolean } | null = null;
      await runMigrationOnce(db, HOST_NODE_REGISTRATION, async () => {
        registration = await nodes.registerHostNode();
        return true;
      });
      return registration;
    },

    /** Drops expired allow-list entries, login records past retention and ended attempt windows. */
    async cleanup(): Promise<{ tokens: number; loginRecords: number; loginAttempts: number }> {
      const cutoff = new Date(clock.now().getTime() - LOGIN_LIMITS.retentionMs);
      return {
        tokens: await tokens.deleteExpired(),
        loginRecords: await accountsRepo.deleteLoginRecordsBefore(cutoff),
        loginAttempts: await attempts.deleteExpired(),
      };
    },
  };
}

export type ClusterServices = ReturnType<typeof createClusterServices>;
