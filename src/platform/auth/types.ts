import type { FastifyRequest } from 'fastify';
import type { ConcurrencyGate } from '../../infra/concurrency-gate.js';

/** Credential kinds a route may accept. */
export type AuthKind = 'session' | 'apiKey' | 'rootKey' | 'outLink' | 'teamSpace';

/** The reference's AuthUserTypeEnum values, as reported downstream. */
export type AuthType = 'token' | 'apikey' | 'root' | 'outLink' | 'teamDomain';

export type TeamRole = 'owner' | 'admin' | 'member';

/** Who is calling, resolved once per request by the platform authenticator. */
export interface AuthContext {
  authType: AuthType;
  userId: string;
  teamId: string;
  tmbId: string;
  /** App the credential is bound to (API key bound to an app, share link). */
  appId?: string;
  /**
   * The app a global key names in the deprecated `fastgpt-<key>-<appId>` form. Only a request:
   * it is authorised exactly like a body `appId` (read permission of the key's member).
   */
  legacyAppId?: string;
  apiKeyId?: string;
  sessionId?: string;
  role: TeamRole;
  /** The member's team permission value (bit flags, see domain/permission). */
  teamPermission: number;
  isRoot: boolean;
  outLink?: { shareId: string; outLinkUid: string };
  /** The member's user's time zone (IANA name), for the time a workflow sees. */
  timezone?: string;
  /** The API key's or share link's name (the reference's `sourceName`, 4.8.13+). */
  sourceName?: string;
}

/**
 * Resolves a credential kind the identity module does not own (share links, team space).
 * Returns null when the request carries no credential of that kind (the next kind is tried);
 * throws when it carries one that is wrong.
 */
export type AuthResolver = (request: FastifyRequest) => Promise<AuthContext | null>;

export interface PlatformAuthenticator {
  /** Resolves the caller from the first credential kind present; refuses with 401 otherwise. */
  authenticate(request: FastifyRequest, kinds: readonly AuthKind[]): Promise<AuthContext>;
  /**
   * Lets the chat module provide the `outLink` and `teamSpace` kinds. Until one is registered
   * that kind is never accepted. Registered resolvers run before the header-based kinds.
   */
  registerResolver(kind: 'outLink' | 'teamSpace', resolver: AuthResolver): void;
  /**
   * The session id named by the request's session token when the token is well signed and
   * unexpired, whatever the state of its user or membership (logout ends it even then); else null.
   */
  sessionIdOf(request: FastifyRequest): string | null;
  /** Adds points to an API key's `usagePoints` (chat completions made with it). */
  addApiKeyUsage(apiKeyId: string, points: number): Promise<void>;
  /**
   * The auth fields of a team member (share links, team spaces and channels act as one), cached
   * like credentials; null when the member, its user or its team is gone.
   */
  memberContext(tmbId: string): Promise<Omit<AuthContext, 'authType'> | null>;
}

declare module 'fastify' {
  interface FastifyInstance {
    platformAuth: PlatformAuthenticator;
    /** Places for bodies read before their sender is known (auth/body-credentials.ts). */
    uploadsBeforeAuth: ConcurrencyGate;
  }
}
