import { ClusterErrors } from '../../infra/errors.js';
import { sameSecret } from '../../infra/secret-compare.js';
import { type AccountsService, CREDENTIALS_TOO_LONG, LoginFailure } from '../accounts/accounts.service.js';
import { TokenError } from './jwt.js';
import type { TokenPair, TokensService } from './tokens.service.js';

export interface TokenRequest {
  grant_type?: string;
  client_id?: string;
  client_secret?: string;
  username?: string;
  password?: string;
  refresh_token?: string;
}

export interface RequestOrigin {
  /** Recorded with the login (the reference's resolution, client headers first). */
  sourceIP: string;
  userAgent: string;
  /** What the per-client login limit counts (request.ip: the peer, or a trusted proxy's word). */
  clientAddress: string;
}

/** The token endpoint's rules (KubeSphere 3.4 §1.2–1.4): client first, then the grant. */
export function createOAuthService(deps: {
  clients: readonly { name: string; secret: string }[];
  multipleLogin: boolean;
  accounts: AccountsService;
  tokens: TokensService;
}) {
  const { accounts, tokens } = deps;

  /**
   * With multiple login off, a new session ends every earlier one once handed out: only entries
   * issued before the new pair go, so of two grants racing the later one's session survives.
   */
  async function endEarlierSessions(username: string, pair: TokenPair): Promise<void> {
    if (!deps.multipleLogin) await tokens.revokeEarlierSessions(username, pair);
  }

  /**
   * Runs a grant's last check on a stored pair and marks it handed out; a pair that fails it (or
   * whose check failed) is deleted unless another grant handed it out, and never returned.
   */
  async function confirmed(pair: TokenPair, check: () => Promise<void>): Promise<TokenPair> {
    try {
      await check();
      await tokens.confirmPair(pair);
    } catch (error) {
      await tokens.discardPair(pair).catch(() => undefined);
      throw error;
    }
    return pair;
  }

  /**
   * Check the password, store the pair, then read the account again (accounts.confirmLogin): a
   * reset racing the grant either is seen there or deletes the stored pair itself.
   */
  async function passwordGrant(request: TokenRequest, origin: RequestOrigin): Promise<TokenPair> {
    try {
      const account = await accounts.login({ username: request.username ?? '', password: request.password ?? '', type: 'Token', ...origin });
      const pair = await tokens.issuePair(account._id, account.uninitialized ? { uninitialized: ['true'] } : undefined);
      await confirmed(pair, () => accounts.confirmLogin(account));
      await endEarlierSessions(account._id, pair);
      return pair;
    } catch (error) {
      if (!(error instanceof LoginFailure)) throw error;
      if (error.kind === CREDENTIALS_TOO_LONG) throw ClusterErrors.oauthInvalidRequest(error.kind);
      throw ClusterErrors.oauthInvalidGrant(error.kind, error.kind === 'auth rate limit exceeded' ? 429 : 400);
    }
  }

  async function refreshGrant(request: TokenRequest): Promise<TokenPair> {
    let claims: Awaited<ReturnType<TokensService['verify']>>;
    try {
      claims = await tokens.verify(request.refresh_token ?? '');
    } catch (error) {
      if (error instanceof TokenError) throw ClusterErrors.oauthInvalidGrant(error.message);
      throw error;
    }
    // "ivalid" is the reference's spelling; clients may match on it.
    if (claims.token_type !== 'refresh_token') throw ClusterErrors.oauthInvalidGrant(`ivalid token type ${claims.token_type} want refresh_token`);
    // Unlike the reference, a disabled (or deleted) account gets no new pair: its tokens would work
    // again the moment it is enabled.
    const account = await accounts.findByName(claims.username);
    if (!account || account.state === 'Disabled') throw ClusterErrors.oauthInvalidGrant('account is not active');
    // The new pair is stored before the refresh token is looked up again: a revocation (reset,
    // logout) deleting the user's tokens either removed it by then or deletes the new pair too.
    // So the earlier sessions end only after that check (multiple login off).
    const pair = await tokens.issuePair(claims.username, claims.extra);
    try {
      await confirmed(pair, () => tokens.requireAllowed(request.refresh_token ?? ''));
    } catch (error) {
      if (error instanceof TokenError) throw ClusterErrors.oauthInvalidGrant(error.message);
      throw error;
    }
    await endEarlierSessions(claims.username, pair);
    return pair;
  }

  return {
    async token(request: TokenRequest, origin: RequestOrigin): Promise<TokenPair> {
      const client = deps.clients.find((candidate) => candidate.name === (request.client_id ?? ''));
      if (!request.client_id || !client) throw ClusterErrors.oauthInvalidClient('the OAuth client was not found');
      if (!sameSecret(request.client_secret ?? '', client.secret)) throw ClusterErrors.oauthInvalidClient('invalid client credential');
      if (request.grant_type === 'password') return passwordGrant(request, origin);
      if (request.grant_type === 'refresh_token') return refreshGrant(request);
      throw ClusterErrors.oauthUnsupportedGrantType();
    },

    /** Ends every session of the caller; anonymous logout does nothing. */
    async logout(username: string | null): Promise<void> {
      if (username) await tokens.revokeAll(username);
    },
  };
}

export type OAuthService = ReturnType<typeof createOAuthService>;
