import type { AttemptLimiter } from '../../infra/attempt-limiter.js';
import { Errors } from '../../infra/errors.js';
import { isDuplicateKeyError } from '../../infra/mongo.js';
import { decoyPasswordHash, hashPassword, verifyPassword } from '../../infra/password-hash.js';
import { bumpAfterWrite } from '../../infra/version-stamps.js';
import type { Clock } from '../clock.js';
import type { AccountsRepo, ClusterAccount } from './accounts.repo.js';
import { passwordPolicyProblem, USERNAME_PATTERN } from './password.js';

/** Reference (ks-installer) defaults: 10 failures in 10 minutes block for 10 minutes. */
export const LOGIN_LIMITS = { maxFailures: 10, windowMs: 10 * 60_000, retentionMs: 7 * 24 * 3600_000, maxRecords: 100 } as const;

export type LoginFailureKind = 'incorrect password' | 'account is not active' | 'auth rate limit exceeded';

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
  /** `Token` for the password grant, `Password` for HTTP Basic on API requests. */
  type: 'Token' | 'Password';
}

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
}) {
  const { accounts, clock, attempts } = deps;

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
     * itself is reserved first (one of 10 slots per account and window, see attempt-limiter), so
     * parallel guesses cannot run more password checks than the limit before the account is blocked.
     */
    async login(attempt: LoginAttempt): Promise<ClusterAccount> {
      // No account name contains NUL; the database would refuse to compare it.
      if (!attempt.username || !attempt.password || attempt.username.includes('\0')) throw new LoginFailure('incorrect password');
      let account = looksLikeEmail(attempt.username) ? await accounts.findByEmail(attempt.username) : await accounts.findByName(attempt.username);
      if (!account) {
        // As long as a wrong password for a real account, so timing does not tell which names
        // exist; unknown names are limited like accounts (their slots are keyed by the name).
        const reservation = await attempts.reserve(`unknown:${attempt.username}`);
        if (reservation.ok) await verifyPassword(attempt.password, await decoyPasswordHash());
        throw new LoginFailure('incorrect password');
      }
      const now = clock.now();
      if (account.state === 'AuthLimitExceeded' && account.lastTransitionTime.getTime() + LOGIN_LIMITS.windowMs <= now.getTime()) {
        if (await accounts.transition(account._id, 'AuthLimitExceeded', 'Active', '', now)) await attempts.clear(account._id);
        account = { ...account, state: 'Active', lastTransitionTime: now };
      }
      if (account.state === 'AuthLimitExceeded') throw new LoginFailure('auth rate limit exceeded');
      if (account.state !== 'Active') throw new LoginFailure('account is not active');
      const reservation = await attempts.reserve(account._id);
      if (!reservation.ok) throw new LoginFailure('auth rate limit exceeded');
      let valid: boolean;
      try {
        valid = await verifyPassword(attempt.password, account.passwordHash);
      } catch (error) {
        await attempts.release(reservation.slotId);
        throw error;
      }
      if (!valid) {
        // The reservation stays: it is this failure's place in the window.
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
