import type { FastifyRequest } from 'fastify';
import { ClusterErrors } from '../../infra/errors.js';
import type { VersionStamps } from '../../infra/version-stamps.js';
import { type AccountsService, LoginFailure } from '../accounts/accounts.service.js';
import type { Clock } from '../clock.js';
import { type ClusterClaims, TokenError } from '../oauth/jwt.js';
import type { TokensService } from '../oauth/tokens.service.js';
import { CLUSTER_STAMPS } from '../stamps.js';
import { createCredentialCache } from '../../infra/credential-cache.js';

/** Who is calling: a cluster user, or null for a request without credentials (anonymous). */
export interface ClusterIdentity {
  username: string;
  groups: string[];
  via: 'bearer' | 'basic';
}

export interface AuthenticateOptions {
  /**
   * Accept refresh tokens as bearer. Only on /oauth/*: ks-console sends its refresh token as
   * bearer while refreshing. On /kapis a refresh token is refused (docs/decisions.md#oauth).
   */
  allowRefreshToken: boolean;
}

const unauthorized = ClusterErrors.unauthorized;

/** Source IP as the reference resolves it: client headers first, then the socket. */
export function sourceIP(request: FastifyRequest): string {
  const header = (name: string) => {
    const value = request.headers[name];
    return (Array.isArray(value) ? value[0] : value)?.split(',')[0]?.trim();
  };
  const ip = header('x-client-ip') || header('x-real-ip') || header('x-forwarded-for') || request.socket.remoteAddress || '';
  return ip === '::1' ? '127.0.0.1' : ip.replace(/^::ffff:/, '');
}

/**
 * The scheme and the credentials of an Authorization header: its first two space-separated
 * words, as `header.split(' ')` gives them (every request pays for this: no array, no copies).
 */
export function splitAuthorization(header: string): { scheme: string; credentials: string } {
  const space = header.indexOf(' ');
  if (space < 0) return { scheme: header, credentials: '' };
  const next = header.indexOf(' ', space + 1);
  return { scheme: header.slice(0, space), credentials: header.slice(space + 1, next < 0 ? header.length : next) };
}

/** What a resolved bearer token proved: its claims (checked) and the account it names. */
interface ResolvedBearer {
  claims: ClusterClaims;
  identity: ClusterIdentity;
}

/** Margin before expiry (and the issue-time skew) inside which a cached token is verified afresh. */
const FRESH_MARGIN_SECONDS = 5;

/**
 * Bearer tokens: the first use of a token (per accounts stamp) verifies it (signature, expiry,
 * type) and reads its allow-list entry and account; the result is cached under the token's exact
 * text while the accounts stamp is unchanged, so a warm request costs at most that stamp's read.
 * A cached token close to its expiry goes through the full check again (the exact reference texts).
 */
export function createAuthenticator(deps: { accounts: AccountsService; tokens: TokensService; stamps: VersionStamps; clock: Clock }) {
  const { accounts, tokens, stamps, clock } = deps;
  // Kept while the accounts stamp is unchanged (every cluster revocation bumps it), and at most the
  // cache's age limit: a revoking process stopped between its write and its bump is honoured then.
  const resolved = createCredentialCache<ResolvedBearer>({
    epoch: { current: () => stamps.read(CLUSTER_STAMPS.accounts) },
    now: () => clock.now().getTime(),
  });

  function checkTokenType(claims: ClusterClaims, options: AuthenticateOptions): void {
    if (claims.token_type !== 'access_token' && !options.allowRefreshToken) {
      throw unauthorized(`a ${claims.token_type} cannot be used as a bearer token, use the access_token`);
    }
  }

  /** The cached check still holds: well before expiry and not issued in the future. */
  function clearlyCurrent(claims: ClusterClaims): boolean {
    const nowSeconds = clock.now().getTime() / 1000;
    return claims.exp - FRESH_MARGIN_SECONDS > nowSeconds && (typeof claims.iat !== 'number' || claims.iat <= nowSeconds);
  }

  /** The full check: signature and times, then the allow-list entry and the account, read together. */
  async function resolve(token: string, options: AuthenticateOptions): Promise<ResolvedBearer> {
    let claims: ClusterClaims;
    try {
      claims = tokens.verifySignature(token);
    } catch (error) {
      if (error instanceof TokenError) throw unauthorized(error.message);
      throw error;
    }
    const [allowed, found] = await Promise.allSettled([tokens.requireAllowed(token), accounts.findByName(claims.username)]);
    if (allowed.status === 'rejected') throw allowed.reason instanceof TokenError ? unauthorized(allowed.reason.message) : allowed.reason;
    if (found.status === 'rejected') throw found.reason;
    checkTokenType(claims, options);
    const account = found.value;
    if (!account) throw unauthorized(`user.iam.kubesphere.io "${claims.username}" not found`);
    // A blocked (AuthLimitExceeded) account keeps its sessions, as in the reference.
    if (account.state === 'Disabled') throw unauthorized('account is not active');
    return { claims, identity: { username: account._id, groups: account.groups, via: 'bearer' } };
  }

  async function bearer(token: string, options: AuthenticateOptions): Promise<ClusterIdentity> {
    // The stamp is read before the lookups: what they find is cached under the one they started from.
    const result = await resolved.get(token, () => resolve(token, options), (cached) => clearlyCurrent(cached.claims));
    checkTokenType(result.claims, options);
    return result.identity;
  }

  /** HTTP Basic is a full password login (the reference's Basic authenticator). */
  async function basic(encoded: string, request: FastifyRequest): Promise<ClusterIdentity> {
    const decoded = Buffer.from(encoded, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    // Standard, padded base64 only, as Go's BasicAuth decodes it: unpadded text is no credential.
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || encoded.length % 4 !== 0 || colon < 0) throw unauthorized('the Basic credentials are not base64 of user:password');
    try {
      const account = await accounts.login({
        username: decoded.slice(0, colon),
        password: decoded.slice(colon + 1),
        type: 'Password',
        sourceIP: sourceIP(request),
        userAgent: request.headers['user-agent'] ?? '',
        clientAddress: request.ip,
      });
      return { username: account._id, groups: account.groups, via: 'basic' };
    } catch (error) {
      if (error instanceof LoginFailure) throw unauthorized(error.kind);
      throw error;
    }
  }

  return {
    /** Null when there is no Authorization header; a 401 Status error when it is not acceptable. */
    async authenticate(request: FastifyRequest, options: AuthenticateOptions): Promise<ClusterIdentity | null> {
      const header = request.headers.authorization;
      if (header === undefined || header.trim() === '') return null;
      const { scheme, credentials } = splitAuthorization(header);
      const kind = scheme.toLowerCase();
      if (kind === 'bearer') {
        if (!credentials) throw unauthorized('the Bearer authorization header carries no token');
        return bearer(credentials, options);
      }
      if (kind === 'basic') return basic(credentials, request);
      throw unauthorized(`unsupported authorization scheme "${scheme}", expected Bearer`);
    },
  };
}

export type Authenticator = ReturnType<typeof createAuthenticator>;
