import { createHash } from 'node:crypto';
import { decodeJwtUnchecked } from '../../infra/jwt.js';
import { bumpAfterWrite, type VersionStamps } from '../../infra/version-stamps.js';
import type { Clock } from '../clock.js';
import { CLUSTER_STAMPS } from '../stamps.js';
import { type ClusterClaims, signToken, TokenError, type TokenType, verifyToken } from './jwt.js';
import type { TokensRepo } from './tokens.repo.js';

export const ACCESS_TOKEN_SECONDS = 7200;
/** Access lifetime plus the reference's default inactivity timeout (2 h + 2 h). */
export const REFRESH_TOKEN_SECONDS = 14400;
const ISSUER = 'kubesphere';

export interface TokenPair {
  access_token: string;
  token_type: 'Bearer';
  refresh_token: string;
  expires_in: number;
}

export const tokenDigest = (token: string) => createHash('sha256').update(token).digest('hex');
const pairDigests = (pair: TokenPair) => [tokenDigest(pair.access_token), tokenDigest(pair.refresh_token)];
/** When a pair this service signed was issued (its `iat`; both tokens share it). */
const issuedAt = (pair: TokenPair) => new Date(Number(decodeJwtUnchecked(pair.access_token)?.payload.iat) * 1000);

export function createTokensService(deps: { tokens: TokensRepo; clock: Clock; secret: string; stamps: VersionStamps }) {
  const { tokens, clock, secret, stamps } = deps;

  /** Throws TokenError unless the token is still in the allow-list (one read). */
  async function requireAllowed(token: string): Promise<void> {
    const entry = await tokens.find(tokenDigest(token));
    if (!entry || entry.expiresAt <= clock.now()) throw new TokenError('token not found in cache');
  }

  /**
   * Deletes every allow-list entry of the user, then moves the accounts stamp (waiting out its
   * lease) when something was deleted, when `always`, or when the delete failed (some may be gone).
   */
  async function deleteSessions(username: string, always: boolean, issuedBefore?: Date): Promise<void> {
    await bumpAfterWrite(
      () => tokens.deleteForUser(username, issuedBefore),
      () => stamps.bump(CLUSTER_STAMPS.accounts),
      (deleted) => deleted > 0 || always,
    );
  }

  async function issueOne(username: string, type: TokenType, lifetime: number, iat: number, extra?: Record<string, string[]>) {
    const claims: ClusterClaims = { iss: ISSUER, sub: username, username, token_type: type, iat, exp: iat + lifetime };
    if (extra && Object.keys(extra).length > 0) claims.extra = extra;
    const token = signToken(claims, secret);
    await tokens.save({ _id: tokenDigest(token), username, tokenType: type, expiresAt: new Date(claims.exp * 1000), issuedAt: new Date(iat * 1000) });
    return token;
  }

  return {
    async issuePair(username: string, extra?: Record<string, string[]>): Promise<TokenPair> {
      const iat = Math.floor(clock.now().getTime() / 1000);
      const access = await issueOne(username, 'access_token', ACCESS_TOKEN_SECONDS, iat, extra);
      const refresh = await issueOne(username, 'refresh_token', REFRESH_TOKEN_SECONDS, iat, extra);
      return { access_token: access, token_type: 'Bearer', refresh_token: refresh, expires_in: ACCESS_TOKEN_SECONDS };
    },

    /** Signature, expiry and issue time only (no database). Throws TokenError. */
    verifySignature: (token: string): ClusterClaims => verifyToken(token, secret, clock.now()),

    requireAllowed,

    /** Signature, expiry, issue time, then presence in the allow-list. Throws TokenError. */
    async verify(token: string): Promise<ClusterClaims> {
      const claims = verifyToken(token, secret, clock.now());
      await requireAllowed(token);
      return claims;
    },

    /**
     * Ends every session of the user (logout, password reset); processes drop their cached
     * credentials before this resolves. The stamp moves even when nothing was left to delete: a
     * concurrent revocation may have deleted the entries without having moved it yet.
     */
    revokeAll: (username: string) => deleteSessions(username, true),

    /**
     * Ends the user's sessions issued before `pair` (multiple login off), once `pair` is stored:
     * of two grants racing, each deletes only what is older than its own pair, so the later one
     * survives (a grant that deleted everything but its own pair deleted the other's, and both
     * clients were logged out). The stamp moves only when entries were deleted here, so a first
     * login flushes no cache; a concurrent revocation that deleted them moves it itself.
     */
    revokeEarlierSessions: (username: string, pair: TokenPair) => deleteSessions(username, false, issuedAt(pair)),

    /** Marks a stored pair as handed out: its grant passed its last check. */
    confirmPair: (pair: TokenPair) => tokens.confirmDigests(pairDigests(pair)),

    /**
     * Deletes a pair that was stored but never handed out (a login refused at its last check):
     * no process can have cached it, so no stamp moves. Two grants within one second store the
     * same pair; one that another grant confirmed is that grant's answer and stays (multiple
     * login off: the other grant's refresh token was revoked by that grant, which is why its
     * check failed; a revocation that ended the session deleted the pair itself).
     */
    discardPair: (pair: TokenPair) => tokens.deleteUnconfirmed(pairDigests(pair)),
    deleteExpired: () => tokens.deleteExpired(clock.now()),
    countForUser: (username: string) => tokens.countForUser(username),
  };
}

export type TokensService = ReturnType<typeof createTokensService>;
