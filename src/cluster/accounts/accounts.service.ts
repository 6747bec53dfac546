import type { AttemptLimiter } from '../../infra/attempt-limiter.js';
import { Errors } from '../../infra/errors.js';
import { isDuplicateKeyError } from '../../infra/mongo.js';
import { decoyPasswordHash, hashPassword, verifyPassword } from '../../infra/password-hash.js';
import { bumpAfterWrite } from '../../infra/version-stamps.js';
import type { Clock } from '../clock.js';
import type { AccountsRepo, ClusterAccount } from './accounts.repo.js';
import { passwordPolicyProblem, USERNAME_PATTERN } from './password.js';

/**
 * Reference (ks-installer) defaults: 10 failures in 10 minutes block for 10 minutes. Not in the
 * reference: at most 30 password checks per client address in the same window (failures keep
 * theirs), three accounts' worth, so one account blocked by guesses does not block the other
 * users behind the same address (an office, ks-console), while an anonymous client still cannot
 * run more than 30 scrypt checks per window with unknown or many names.
 */
export const LOGIN_LIMITS = { maxFailures: 10, maxClientFailures: 30, windowMs: 10 * 60_000, retentionMs: 7 * 24 * 3600_000, maxRecords: 100, slotWaitMs: 10_000 } as const;

/**
 * Longest user name or password a login reads (characters). Names are at most 63 and passwords
 * 64 by the policy; anything longer is refused before any lookup, check or stored attempt.
 */
export const CREDENTIAL_MAX_LENGTH = 256;

export type LoginFailureKind = 'incorrect password' | 'account is not active' | 'auth rate limit exceeded' | typeof CREDENTIALS_TOO_LONG;

/** Not a reference text: the reference has no length limit (the grant answers it as 400 invalid_request). */
export const CREDENTIALS_TOO_LONG = 'username and password must be at most 256 characters';

/** Why a password login was refused; the message is the reference's error text. */
export class LoginFailure extends Error {
  constructor(readonly kind: LoginFailureKind) {
    super(kind);
  }
}

export interface LoginAttempt {
  username: string;
  password: string;
  sourceIP: string;
  userAgent: string;
  /**
   * The address the per-client limit counts (the connection's peer, or what TRUST_PROXY lets the
   * proxy say): `sourceIP` is only recorded, since a client writes its headers itself.
   */
  clientAddress: string;
  /** `Token` for the password grant, `Password` for HTTP Basic on API requests. */
  type: 'Token' | 'Password';
}

/** The attempt-limiter key of a client address (account keys are user names, which have no ':'). */
const clientKey = (address: string) => `ip:${address}`;

// A pragmatic RFC 5322 test: the reference looks users up by e-mail when the name parses as one.
const looksLikeEmail = (text: string) => /^[^\s@<>()[\],;:"]+@[^\s@<>()[\],;:"]+\.[^\s@<>()[\],;:"]+$/.test(text);

export function createAccountsService(deps: {
  accounts: AccountsRepo;
  clock: Clock;
  revokeTokens: (username: string) => Promise<void>;
  /** Tells every process that cached account states changed; resolves once they all know. */
  accountStateChanged: () => Promise<void>;
  /** Password checks per account in the window, reserved before each check (all replicas share it). */
  attempts: AttemptLimiter;
  /** Password checks per client address in the window (`ip:` keys); `attempts` when absent. */
  clientAttempts?: AttemptLimiter;
}) {
  const { accounts, clock, attempts } = deps;
  const clientAttempts = deps.clientAttempts ?? attempts;

  async function record(account: ClusterAccount, attempt: LoginAttempt, success: boolean, now: Date) {
    // As the reference: a successful HTTP Basic authentication leaves no record.
    if (success && attempt.type === 'Password') return;
    await accounts.addLoginRecord({
      username: account._id,
      type: attempt.type,
      provider: '',
      sourceIP: attempt.sourceIP,
      userAgent: attempt.userAgent,
      success,
      reason: success ? 'authenticated successfully' : 'incorrect password',
      createdAt: now,
    });
    // As the reference's controller does: failed attempts update the last login time too.
    await accounts.touchLastLogin(account._id, now);
    await accounts.trimLoginRecords(account._id, LOGIN_LIMITS.maxRecords);
  }

  /** Blocks the account once enough failures happened in the window since its last transition. */
  async function blockIfTooManyFailures(account: ClusterAccount, now: Date) {
    const windowStart = new Date(now.getTime() - LOGIN_LIMITS.windowMs);
    const since = account.lastTransitionTime > windowStart ? account.lastTransitionTime : windowStart;
    const failures = await accounts.countFailuresSince(account._id, since);
    if (failures >= LOGIN_LIMITS.maxFailures) {
      const reason = `Failed login attempts exceed ${LOGIN_LIMITS.maxFailures} in last 10m0s`;
      await accounts.transition(account._id, 'Active', 'AuthLimitExceeded', reason, now);
    }
  }

  /** How long the last password check took: an unknown name past its address's limit waits as long. */
  let lastCheckMs = 50;
  async function timedCheck(password: string, hash: string): Promise<boolean> {
    const started = performance.now();
    const valid = await verifyPassword(password, hash);
    lastCheckMs = performance.now() - started;
    return valid;
  }

  async function requireAccount(username: string): Promise<ClusterAccount> {
    const account = await accounts.findByName(username);
    if (!account) throw Errors.notFound(`cluster user "${username}" not found`);
    return account;
  }

  return {
    findByName: (username: string) => accounts.findByName(username),
    listLoginRecords: (username: string) => accounts.listLoginRecords(username),

    /**
     * Checks a password login as the reference does: lookup, state, then password. The check
     * itself is reserved first, one of 10 slots per account in the window (see attempt-limiter),
     * so parallel guesses cannot run more password checks than the limit; while some slots are
     * held by checks in progress rather than failures, a check waits for one (successes never
     * count), up to LOGIN_LIMITS.slotWaitMs. An unknown name gets a
     * decoy check (as slow as a real one), one of 30 per client address in the window; past them
     * the same answer comes after as long, without a check. Known accounts take no address slot:
     * a shared address (a NAT, a console logging users in) must not lock its users out.
     */
    async login(attempt: LoginAttempt): Promise<ClusterAccount> {
      if (attempt.username.length > CREDENTIAL_MAX_LENGTH || attempt.password.length > CREDENTIAL_MAX_LENGTH) throw new LoginFailure(CREDENTIALS_TOO_LONG);
      // No account name contains NUL; the database would refuse to compare it.
      if (!attempt.username || !attempt.password || attempt.username.includes('\0')) throw new LoginFailure('incorrect password');
      let account = looksLikeEmail(attempt.username) ? await accounts.findByEmail(attempt.username) : await accounts.findByName(attempt.username);
      if (!account) {
        // As long as a wrong password for a real account, so that neither the answer nor its time
        // tells which names exist; the client's window bounds the checks this costs.
        const clientSlot = await clientAttempts.reserve(clientKey(attempt.clientAddress));
        if (clientSlot.ok) await timedCheck(attempt.password, await decoyPasswordHash());
        else await new Promise((resolve) => setTimeout(resolve, lastCheckMs));
        throw new LoginFailure('incorrect password');
      }
      const now = clock.now();
      if (account.state === 'AuthLimitExceeded' && account.lastTransitionTime.getTime() + LOGIN_LIMITS.windowMs <= now.getTime()) {
        if (await accounts.transition(account._id, 'AuthLimitExceeded', 'Active', '', now)) await attempts.clear(account._id);
        account = { ...account, state: 'Active', lastTransitionTime: now };
      }
      if (account.state === 'AuthLimitExceeded') throw new LoginFailure('auth rate limit exceeded');
      if (account.state !== 'Active') throw new LoginFailure('account is not active');
      const reservation = await attempts.reserve(account._id, { waitMs: LOGIN_LIMITS.slotWaitMs });
      if (!reservation.ok) throw new LoginFailure('auth rate limit exceeded');
      let valid: boolean;
      try {
        valid = await timedCheck(attempt.password, account.passwordHash);
      } catch (error) {
        await attempts.release(reservation.slotId);
        throw error;
      }
      if (!valid) {
        // The reservation stays: it is this failure's place in the window.
        await attempts.markFailed(reservation.slotId);
        await record(account, attempt, false, now);
        await blockIfTooManyFailures(account, now);
        throw new LoginFailure('incorrect password');
      }
      await attempts.release(reservation.slotId);
      await record(account, attempt, true, now);
      return account;
    },

    /**
     * The last step of a password grant, after its tokens are stored and before they leave: the
     * account is read again. A password reset writes the new hash before it deletes the user's
     * tokens, so either this read sees the new hash or that delete sees the new tokens; a disable
     * is seen here or refuses the tokens at their use (docs/decisions.md#login-races).
     */
    async confirmLogin(account: ClusterAccount): Promise<void> {
      const current = await accounts.findLoginMarker(account._id);
      if (current?.passwordHash !== account.passwordHash) throw new LoginFailure('incorrect password');
      if (current.state === 'Disabled') throw new LoginFailure('account is not active');
    },

    async create(input: { username: string; email: string; password: string }, options: { uninitialized?: boolean; skipPolicy?: boolean } = {}) {
      if (!USERNAME_PATTERN.test(input.username) || input.username.length > 63) {
        throw Errors.missingParams(`Invalid field 'username': "${input.username}" must be lowercase letters, digits, '-' and '.'`);
      }
      if (!looksLikeEmail(input.email)) throw Errors.missingParams(`Invalid field 'email': "${input.email}" is not an e-mail address`);
      const problem = options.skipPolicy ? null : passwordPolicyProblem(input.password);
      if (problem) throw Errors.missingParams(`Invalid field 'password': ${problem}`);
      const now = clock.now();
      const account: ClusterAccount = {
        _id: input.username,
        email: input.email,
        passwordHash: await hashPassword(input.password),
        state: 'Active',
        reason: '',
        lastTransitionTime: now,
        lastLoginTime: null,
        uninitialized: options.uninitialized ?? false,
        groups: [],
        createdAt: now,
        passwordChangedAt: now,
      };
      try {
        await accounts.insert(account);
      } catch (error) {
        if (!isDuplicateKeyError(error)) throw error;
        const byName = await accounts.findByName(input.username);
        throw Errors.conflict(byName ? `cluster user "${input.username}" already exists` : `user email: ${input.email} already exists`);
      }
      return account;
    },

    async setDisabled(username: string, disabled: boolean) {
      await requireAccount(username);
      // A disable ends the sessions before the state write too (as a password reset does): one
      // stopped after the write left them stored, and an enable instead of a retry revived them.
      if (disabled) await deps.revokeTokens(username);
      // The stamp moves even when a step failed: the state may have changed, and cached tokens must see it.
      await bumpAfterWrite(async () => {
        await accounts.transition(username, null, disabled ? 'Disabled' : 'Active', disabled ? 'disabled by an administrator' : '', clock.now());
        // Failures before a transition no longer count (the reference counts from the last one).
        await attempts.clear(username);
      }, deps.accountStateChanged);
      // A disabled account's sessions end (the state already refuses them at use): enabling it
      // again does not bring them back.
      if (disabled) await deps.revokeTokens(username);
      return requireAccount(username);
    },

    /** Sets a new password (policy checked) and ends the user's sessions. */
    async resetPassword(username: string, password: string) {
      const problem = passwordPolicyProblem(password);
      if (problem) throw Errors.missingParams(`Invalid field 'password': ${problem}`);
      await requireAccount(username);
      const hash = await hashPassword(password);
      // Tokens end before the write too: a process stopped in between leaves none of the old password.
      await deps.revokeTokens(username);
      await accounts.setPassword(username, hash, clock.now());
      await deps.revokeTokens(username);
      return requireAccount(username);
    },
  };
}

export type AccountsService = ReturnType<typeof createAccountsService>;

/** What the API and CLI show of an account (never the hash). */
export function publicAccount(account: ClusterAccount) {
  return {
    username: account._id,
    email: account.email,
    state: account.state,
    reason: account.reason || undefined,
    uninitialized: account.uninitialized,
    lastLoginTime: account.lastLoginTime?.toISOString() ?? null,
    createdAt: account.createdAt.toISOString(),
  };
}
