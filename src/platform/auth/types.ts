import type { FastifyRequest } from 'fastify';

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
  apiKeyId?: string;
  sessionId?: string;
  role: TeamRole;
  /** The member's team permission value (bit flags, see domain/permission). */
  teamPermission: number;
  isRoot: boolean;
  outLink?: { shareId: string; outLinkUid: string };
}

export interface PlatformAuthenticator {
  /** Resolves the caller from the first credential kind present; refuses with 401 otherwise. */
  authenticate(request: FastifyRequest, kinds: readonly AuthKind[]): Promise<AuthContext>;
}

declare module 'fastify' {
  interface FastifyInstance {
    platformAuth: PlatformAuthenticator;
  }
}
