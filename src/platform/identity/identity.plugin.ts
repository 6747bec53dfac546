import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { type AttemptLimiter, attemptIndexes, createAttemptLimiter } from '../../infra/attempt-limiter.js';
import { startPeriodicTask } from '../../infra/backoff.js';
import { createConcurrencyGate } from '../../infra/concurrency-gate.js';
import { describeError } from '../../infra/database-errors.js';
import { createAuthenticator } from '../auth/authenticator.js';
import type { AuthContext, PlatformAuthenticator } from '../auth/types.js';
import { type AccountsService, createAccountsService } from './accounts.service.js';
import { API_KEY_INDEXES, type ApiKeysRepo, createApiKeysRepo, RETIRED_API_KEY_INDEXES } from './api-keys.repo.js';
import { createCredentialEpoch } from './credential-epoch.js';
import { createLoginAddressesRepo, LOGIN_ADDRESS_INDEXES } from './login-addresses.repo.js';
import { createSessionsRepo, SESSION_INDEXES } from './sessions.repo.js';
import { createSessionService, type SessionService } from './sessions.service.js';
import { createTeamsRepo, type MemberProfile, TEAM_INDEXES, type TeamRecord, type TeamsRepo } from './teams.repo.js';
import { createUsageRepo, USAGE_INDEXES, USAGE_RETENTION_MS, type UsageRepo } from './usage.repo.js';
import { type ChargeUsage, type CredentialCharger, createCredentialCharger, createUsageCharger } from './usage-charge.js';
import { createUsersRepo, USER_INDEXES, type UsersRepo } from './users.repo.js';

/** A replaceable clock: tests move time to check expiry and rate-limit windows. */
export interface IdentityClock {
  now(): number;
}

export interface IdentityServices {
  /**
   * The module's repositories, for its own routes, tests and the CLI; other modules use the
   * methods below (still read elsewhere: `usage` by chat turns).
   */
  users: UsersRepo;
  teams: TeamsRepo;
  apiKeys: ApiKeysRepo;
  accounts: AccountsService;
  sessions: SessionService;
  limiter: AttemptLimiter;
  usage: UsageRepo;
  /** Records a request's model usage for its caller and counts it against the caller's credential. */
  chargeUsage: ChargeUsage;
  /** Counts points against a caller's API key or share link (chat turns record their usage themselves). */
  credentials: CredentialCharger;
  /** The module's clock: replace `clock.now` to move time (expiry, rate-limit windows). */
  clock: IdentityClock;
  /** The auth fields of a team member (share links, team spaces, channels act as one). */
  memberContext(tmbId: string): Promise<Omit<AuthContext, 'authType'> | null>;
  /** Names and avatars of a team's members, by tmbId (collaborator lists, share pages). */
  memberProfiles(teamId: string, tmbIds: string[]): Promise<Map<string, MemberProfile>>;
  findTeam(teamId: string): Promise<TeamRecord | null>;
  /** The tmbId of the team's owner, whom a team space acts as; null when the team has none. */
  ownerMemberId(teamId: string): Promise<string | null>;
  /** Removes the API keys bound to these apps (the apps are being deleted). */
  deleteKeysOfApps(teamId: string, appIds: string[]): Promise<void>;
}

declare module 'fastify' {
  interface FastifyInstance {
    identity: IdentityServices;
    platformAuth: PlatformAuthenticator;
  }
}

const SESSION_CLEANUP_MS = 60 * 60 * 1000;
const LOGIN_ATTEMPTS = 'login_attempts';

/** Repositories, services and the platform authenticator (`app.platformAuth`). */
export default fp(
  async function identityPlugin(app: FastifyInstance) {
    const db = app.mongo.db;
    const clock: IdentityClock = { now: () => Date.now() };
    const now = () => clock.now();
    // One epoch per process: its own revocations end its own lease at once.
    const epoch = createCredentialEpoch(db);
    const users = createUsersRepo(db, epoch);
    const teams = createTeamsRepo(db, epoch);
    const sessionsRepo = createSessionsRepo(db, epoch);
    const apiKeys = createApiKeysRepo(db, epoch);
    const accounts = createAccountsService({ users, teams, sessions: sessionsRepo });
    const limiter = createAttemptLimiter(db, {
      collection: LOGIN_ATTEMPTS,
      maxAttempts: 10,
      windowMs: 10 * 60 * 1000,
      now,
      onRefused: () => app.opsMetrics.loginBlocked('platform'),
    });
    const loginAddresses = createLoginAddressesRepo(db);
    const sessions = createSessionService({ tokenKey: app.config.TOKEN_KEY, now, log: app.log, accounts, users, teams, sessions: sessionsRepo, limiter, loginAddresses });

    const platformAuth = createAuthenticator({ tokenKey: app.config.TOKEN_KEY, rootKey: app.config.ROOT_KEY, now, accounts, users, sessions: sessionsRepo, apiKeys, epoch });
    const memberContext = (tmbId: string) => platformAuth.memberContext(tmbId);
    const usage = createUsageRepo(db, {
      onLost: (error, record) => {
        app.opsMetrics.databaseError('usage-record', error);
        // The whole record, so that it can be entered by hand: it holds ids and points, no secret.
        app.log.error({ usageRecord: record }, `a usage record could not be written and is given up: ${describeError(error)}`);
      },
    });
    const credentials = createCredentialCharger({ auth: platformAuth });
    const chargeUsage = createUsageCharger({
      usage,
      credentials,
      now,
      onChargeFailure: (error) => {
        app.opsMetrics.databaseError('usage-charge', error);
        app.log.error({ err: error }, `charging a request to its API key or share link failed (its usage is recorded): ${describeError(error)}`);
      },
    });
    const services: IdentityServices = {
      users,
      teams,
      apiKeys,
      accounts,
      sessions,
      limiter,
      usage,
      chargeUsage,
      credentials,
      clock,
      memberContext,
      memberProfiles: (teamId, tmbIds) => teams.memberProfiles(teamId, tmbIds),
      findTeam: (teamId) => teams.findTeam(teamId),
      ownerMemberId: async (teamId) => (await teams.findOwnerMember(teamId))?._id ?? null,
      deleteKeysOfApps: (teamId, appIds) => apiKeys.deleteByApps(teamId, appIds),
    };
    app.decorate('identity', services);
    app.decorate('platformAuth', platformAuth);
    app.decorate('uploadsBeforeAuth', createConcurrencyGate(app.config.UPLOADS_BEFORE_AUTH_MAX));

    app.startup.add('indexes: identity', async () => {
      // Before the unique digest index: a reused FastGPT database's keys have no digest yet.
      const adopted = await apiKeys.adoptReferenceKeys();
      if (adopted > 0) app.log.info(`adopted ${adopted} API keys stored as the reference stores them (digest kept, key removed)`);
      await app.mongo.ensureIndexes([...USER_INDEXES, ...TEAM_INDEXES, ...SESSION_INDEXES, ...API_KEY_INDEXES, ...USAGE_INDEXES, ...attemptIndexes(LOGIN_ATTEMPTS), ...LOGIN_ADDRESS_INDEXES]);
      await app.mongo.dropRetiredIndexes(RETIRED_API_KEY_INDEXES);
    });
    app.startup.add('identity: root user', () => sessions.ensureRoot(app.config.DEFAULT_ROOT_PSW));
    const cleanups: { stop(): void }[] = [];
    app.startup.add('identity: session cleanup', async () => {
      const periodic = (name: string, source: string, task: () => Promise<unknown>) =>
        startPeriodicTask({ name, intervalMs: SESSION_CLEANUP_MS, task, log: app.log, onFailure: (error) => app.opsMetrics.databaseError(source, error) });
      cleanups.push(periodic('session cleanup', 'session-cleanup', () => sessionsRepo.deleteExpired(new Date(now()))));
      cleanups.push(periodic('login attempt cleanup', 'login-attempt-cleanup', () => limiter.deleteExpired()));
      cleanups.push(periodic('credential revocation pruning', 'credential-revocation-pruning', () => epoch.prune(new Date(now()))));
      cleanups.push(periodic('login address expiry', 'login-address-expiry', () => loginAddresses.deleteExpired(now())));
      cleanups.push(periodic('usage record expiry', 'usage-expiry', () => usage.deleteBefore(new Date(now() - USAGE_RETENTION_MS))));
    });
    app.addHook('onClose', async () => {
      for (const cleanup of cleanups) cleanup.stop();
      // Before the database client closes (registered after it, so run before it).
      await usage.close();
    });
  },
  { name: 'platform-identity', dependencies: ['mongo', 'startup', 'metrics'] },
);
