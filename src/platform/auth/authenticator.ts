import type { FastifyRequest } from 'fastify';
import { expired, usedUp } from '../../domain/credential-limits.js';
import { type AppError, Errors, isAppError } from '../../infra/errors.js';
import { isObjectIdHex } from '../../infra/mongo.js';
import { sameSecret } from '../../infra/secret-compare.js';
import { SESSION_COOKIE } from '../../infra/session-cookie.js';
import type { AccountsService, ResolvedMember } from '../identity/accounts.service.js';
import { type ApiKeyRecord, type ApiKeysRepo, digestApiKey } from '../identity/api-keys.repo.js';
import { type CredentialEpoch, credentialSubject } from '../identity/credential-epoch.js';
import { verifySessionToken } from '../identity/session-token.js';
import type { SessionsRepo } from '../identity/sessions.repo.js';
import type { UsersRepo } from '../identity/users.repo.js';
import { CREDENTIAL_CACHE_SIZE, createCredentialCache } from '../../infra/credential-cache.js';
import type { AuthContext, AuthKind, AuthResolver, PlatformAuthenticator } from './types.js';

export { SESSION_COOKIE };

/** The cookie name of FastGPT 4.8.0–4.8.4, still sent by old clients. */
const LEGACY_SESSION_COOKIE = 'token';

export interface AuthenticatorDeps {
  tokenKey: string;
  rootKey: string;
  now: () => number;
  accounts: AccountsService;
  users: UsersRepo;
  sessions: SessionsRepo;
  apiKeys: ApiKeysRepo;
  epoch: Pick<CredentialEpoch, 'current' | 'revokedBetween'>;
}

/** `lastUsedTime` is written at most this often per key. */
export const API_KEY_TOUCH_INTERVAL_MS = 60_000;

/** A resolved API key: what each use checks again (limits) and the context it grants. */
interface ResolvedApiKey {
  key: Pick<ApiKeyRecord, '_id' | 'appId' | 'limit' | 'usagePoints'>;
  context: AuthContext;
}

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

function sessionTokenOf(request: FastifyRequest): string | undefined {
  const cookies = (request as { cookies?: Record<string, string | undefined> }).cookies ?? {};
  return header(request, 'token') ?? (cookies[SESSION_COOKIE] || undefined) ?? (cookies[LEGACY_SESSION_COOKIE] || undefined);
}

/**
 * Whether an `Authorization` header is an API key attempt: only the `Bearer` scheme is. A proxy in
 * front of the web client (Basic, Digest, ...) adds its own header next to the session's.
 */
export function isBearerAuthorization(authorization: string): boolean {
  return /^bearer(?:\s|$)/i.test(authorization.trim());
}

/** Whether a Bearer header carries a value at all. */
const hasCredential = (authorization: string): boolean => authorization.trim().split(/\s+/).length > 1;

/** `fastgpt-xxx` or the deprecated `fastgpt-xxx-<appId>`; anything else is not an API key. */
export function parseApiKeyCredential(authorization: string): { key: string; appId?: string } | null {
  const credential = authorization.trim().split(/\s+/)[1];
  if (!credential) return null;
  const parts = credential.split('-');
  if (parts.length === 2) return { key: credential };
  if (parts.length === 3) return { key: `${parts[0]}-${parts[1]}`, appId: parts[2] };
  return null;
}

/** Limits the reference leaves to its commercial service; we enforce them. */
export function apiKeyRefusal(key: Pick<ApiKeyRecord, 'limit' | 'usagePoints'>, now: number): AppError | null {
  const expiredTime = key.limit?.expiredTime;
  if (expiredTime && expired(expiredTime, now)) return Errors.apiKeyExpired(expiredTime);
  const max = key.limit?.maxUsagePoints;
  if (max !== undefined && usedUp(max, key.usagePoints)) return Errors.apiKeyUsedUp(max);
  return null;
}

/** Who a resolved member is, as the auth context carries it. */
export function memberFieldsOf(resolved: ResolvedMember): Omit<AuthContext, 'authType'> {
  return {
    userId: resolved.user._id,
    teamId: resolved.member.teamId,
    tmbId: resolved.member._id,
    role: resolved.member.role,
    teamPermission: resolved.teamPermission,
    isRoot: resolved.isRoot,
    timezone: resolved.user.timezone,
  };
}

/** The auth context of a resolved member (share-link and team-space resolvers can reuse it). */
export function contextOf(resolved: ResolvedMember, extra: Partial<AuthContext> & Pick<AuthContext, 'authType'>): AuthContext {
  return Object.assign(memberFieldsOf(resolved), extra);
}

/** What a cached context stands for: a revocation naming any of these drops it. */
function subjectsOf(context: Omit<AuthContext, 'authType'>): string[] {
  const subjects = [credentialSubject.user(context.userId), credentialSubject.member(context.tmbId), credentialSubject.team(context.teamId)];
  if (context.sessionId) subjects.push(credentialSubject.session(context.sessionId));
  if (context.apiKeyId) subjects.push(credentialSubject.apiKey(context.apiKeyId));
  return subjects;
}

/**
 * Credential precedence follows the reference: registered resolvers (share link, team space),
 * then a Bearer `Authorization` (API key), then the `token` header or session cookie, then `rootkey`.
 * The first kind present decides; a failing credential never falls back to another kind. Another
 * `Authorization` scheme is no API key credential at all, so it is skipped rather than refused.
 */
export function createAuthenticator(deps: AuthenticatorDeps): PlatformAuthenticator {
  const resolvers = new Map<'outLink' | 'teamSpace', AuthResolver>();

  const cacheOptions = { epoch: deps.epoch, now: deps.now };
  const sessionCache = createCredentialCache<{ context: AuthContext; expiresAt: number }>({ ...cacheOptions, subjectsOf: ({ context }) => subjectsOf(context) });
  const apiKeyCache = createCredentialCache<ResolvedApiKey>({ ...cacheOptions, subjectsOf: ({ context }) => subjectsOf(context) });
  const memberCache = createCredentialCache<Omit<AuthContext, 'authType'>>({ ...cacheOptions, subjectsOf });
  /** When this process last wrote each key's `lastUsedTime`. */
  const lastTouched = new Map<string, number>();

  async function resolveSession(claims: { sid: string; tmbId: string; userId: string }) {
    const [session, resolved] = await Promise.all([deps.sessions.find(claims.sid), deps.accounts.resolveMember(claims.tmbId, claims.userId)]);
    if (session?.userId !== claims.userId || expired(session.expiresAt, deps.now())) throw Errors.unAuthorization('The session has ended, log in again');
    if (!resolved) throw Errors.unAuthorization('The user or team membership of this session no longer exists');
    return { context: contextOf(resolved, { authType: 'token', sessionId: claims.sid }), expiresAt: session.expiresAt.getTime() };
  }

  async function bySession(token: string): Promise<AuthContext> {
    const now = deps.now();
    const claims = verifySessionToken(token, deps.tokenKey, now);
    if (!claims || !isObjectIdHex(claims.sid) || !isObjectIdHex(claims.tmbId) || !isObjectIdHex(claims.userId)) {
      throw Errors.unAuthorization('The session token is invalid or expired');
    }
    const session = await sessionCache.get(`${claims.sid}:${claims.tmbId}:${claims.userId}`, () => resolveSession(claims));
    if (!session || expired(session.expiresAt, now)) throw Errors.unAuthorization('The session has ended, log in again');
    return { ...session.context };
  }

  async function resolveApiKey(digest: string): Promise<ResolvedApiKey> {
    const key = await deps.apiKeys.findByDigest(digest);
    if (!key) throw Errors.unAuthApiKey('The API key is not valid');
    const refusal = apiKeyRefusal(key, deps.now());
    if (refusal) throw refusal;
    const resolved = await deps.accounts.resolveMember(key.tmbId);
    if (resolved?.member.teamId !== key.teamId) throw Errors.unAuthApiKey('The creator of this API key is no longer a member of its team');
    const context = contextOf(resolved, { authType: 'apikey', apiKeyId: key._id, appId: key.appId || undefined, sourceName: key.name });
    return { key: { _id: key._id, appId: key.appId, limit: key.limit, usagePoints: key.usagePoints }, context };
  }

  /**
   * At most once a minute per key: this process's memo, and a write that loses to a newer one.
   * A last-use time is no reason to refuse a request: a touch that fails (the key's lock held by
   * a charge, or by a replica that died holding it, past the lock's wait) is left to the next
   * minute's, without failing this request or making the next ones wait again.
   */
  async function touch(id: string, now: number): Promise<void> {
    const last = lastTouched.get(id);
    if (last !== undefined && Math.abs(now - last) < API_KEY_TOUCH_INTERVAL_MS) return;
    if (lastTouched.size >= CREDENTIAL_CACHE_SIZE) lastTouched.clear();
    lastTouched.set(id, now);
    await deps.apiKeys.touch(id, new Date(now), new Date(now - API_KEY_TOUCH_INTERVAL_MS)).catch(() => undefined);
  }

  async function byApiKey(authorization: string): Promise<AuthContext> {
    const parsed = parseApiKeyCredential(authorization);
    // A value of another shape is a key that does not exist, not a header written wrong.
    if (!parsed) throw hasCredential(authorization) ? Errors.unAuthApiKey('The API key is not valid') : Errors.unAuthorization("The Authorization header must be 'Bearer <API key>'");
    const digest = digestApiKey(parsed.key);
    const resolved = await apiKeyCache.get(digest, () => resolveApiKey(digest));
    if (!resolved) throw Errors.unAuthApiKey('The API key is not valid');
    const now = deps.now();
    // Expiry moves with the clock; reaching the usage limit moves the epoch (naming the key), so a cached count is enough.
    const refusal = apiKeyRefusal(resolved.key, now);
    if (refusal) throw refusal;
    await touch(resolved.key._id, now);
    return Object.assign({}, resolved.context, { legacyAppId: resolved.key.appId ? undefined : parsed.appId });
  }

  async function byRootKey(given: string): Promise<AuthContext> {
    if (!sameSecret(given, deps.rootKey)) throw Errors.unAuthorization('The root key is not valid');
    const root = await deps.users.findByUsername('root');
    // Only a refusal means "no usable root"; a database failure propagates (503, not 401).
    const resolved = root ? await deps.accounts.loginMember(root).catch((error: unknown) => (isAppError(error) ? null : Promise.reject(error))) : null;
    if (!resolved) throw Errors.unAuthorization('The root user does not exist yet');
    return contextOf(resolved, { authType: 'root', isRoot: true });
  }

  return {
    async authenticate(request, kinds: readonly AuthKind[]) {
      for (const kind of ['outLink', 'teamSpace'] as const) {
        const resolver = kinds.includes(kind) ? resolvers.get(kind) : undefined;
        const context = resolver ? await resolver(request) : null;
        if (context) return context;
      }
      const authorization = header(request, 'authorization');
      if (kinds.includes('apiKey') && authorization && isBearerAuthorization(authorization)) return byApiKey(authorization);
      const token = kinds.includes('session') ? sessionTokenOf(request) : undefined;
      if (token) return bySession(token);
      const rootKey = header(request, 'rootkey');
      if (kinds.includes('rootKey') && rootKey) return byRootKey(rootKey);
      const accepted = kinds.filter((kind) => (kind !== 'outLink' && kind !== 'teamSpace') || resolvers.has(kind));
      // A Bearer credential was sent, just not one this route takes: "missing" would mislead.
      if (!kinds.includes('apiKey') && authorization && isBearerAuthorization(authorization)) throw Errors.unAuthorization(`An API key is not accepted here; this endpoint accepts ${accepted.join(', ')}`);
      const skipped = kinds.includes('apiKey') && authorization ? "; an Authorization header other than 'Bearer <API key>' is not read as an API key" : '';
      throw Errors.unAuthorization(`Missing credentials: this endpoint accepts ${accepted.join(', ') || 'no credential kind available'}${skipped}`);
    },
    sessionIdOf(request) {
      const token = sessionTokenOf(request);
      const claims = token ? verifySessionToken(token, deps.tokenKey, deps.now()) : null;
      return claims && isObjectIdHex(claims.sid) ? claims.sid : null;
    },
    registerResolver(kind, resolver) {
      resolvers.set(kind, resolver);
    },
    async addApiKeyUsage(apiKeyId, points) {
      if (!isObjectIdHex(apiKeyId) || !Number.isFinite(points) || points <= 0) return;
      await deps.apiKeys.addUsagePoints(apiKeyId, points);
    },
    async memberContext(tmbId) {
      if (!isObjectIdHex(tmbId)) return null;
      const fields = await memberCache.get(tmbId, async () => {
        const resolved = await deps.accounts.resolveMember(tmbId);
        return resolved ? memberFieldsOf(resolved) : null;
      });
      return fields ? { ...fields } : null;
    },
  };
}
