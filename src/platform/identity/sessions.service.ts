import { randomBytes } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { AttemptLimiter } from '../../infra/attempt-limiter.js';
import { Errors } from '../../infra/errors.js';
import { isObjectIdHex } from '../../infra/mongo.js';
import { type AccountsService, type ResolvedMember, ROOT_USERNAME } from './accounts.service.js';
import type { LoginAddressesRepo } from './login-addresses.repo.js';
import { decoyPasswordHash, hashPassword, verifyPassword } from './password.js';
import { replacePassword } from './password-change.js';
import { SESSION_TTL_SECONDS, signSessionToken } from './session-token.js';
import type { SessionsRepo } from './sessions.repo.js';
import type { TeamsRepo } from './teams.repo.js';
import { buildUserDetail, publicUserDocument } from './user-detail.js';
import type { UserRecord, UsersRepo } from './users.repo.js';

export interface SessionServiceDeps {
  tokenKey: string;
  now: () => number;
  log: FastifyBaseLogger;
  accounts: AccountsService;
  users: UsersRepo;
  teams: TeamsRepo;
  sessions: SessionsRepo;
  /** Failed-login counts per account and per IP, shared by every replica. */
  limiter: AttemptLimiter;
  /** Where each account logged in from lately: those addresses pass the account's limit. */
  loginAddresses: LoginAddressesRepo;
}

/** The root team's balance as the reference sets it at every start (9999 × PRICE_SCALE). */
const ROOT_TEAM_BALANCE = 9999 * 100000;

/** Login, logout, password change and the root bootstrap. */
export function createSessionService(deps: SessionServiceDeps) {
  const { accounts, users, teams, sessions, limiter, loginAddresses } = deps;

  /** Stores a session and signs its token. */
  async function storeSession(resolved: ResolvedMember): Promise<{ sessionId: string; token: string }> {
    const now = deps.now();
    const session = await sessions.create({
      userId: resolved.user._id,
      tmbId: resolved.member._id,
      createTime: new Date(now),
      expiresAt: new Date(now + SESSION_TTL_SECONDS * 1000),
    });
    const claims = { userId: resolved.user._id, teamId: resolved.member.teamId, tmbId: resolved.member._id, isRoot: resolved.isRoot, sid: session._id };
    return { sessionId: session._id, token: signSessionToken(claims, deps.tokenKey, now) };
  }

  /**
   * The last step of a login, after its session is stored and before its token leaves: the
   * password hash and status are read again. A reset, change or disable writes them before it
   * deletes the user's sessions, so either this read sees the write or that delete sees the new
   * session (docs/decisions.md#login-races). 'password' or 'disabled' when the login must be
   * refused; its session is then deleted.
   */
  async function changedSinceCheck(user: UserRecord, sessionId: string): Promise<'password' | 'disabled' | null> {
    let current: Awaited<ReturnType<UsersRepo['findLoginMarker']>>;
    try {
      current = await users.findLoginMarker(user._id);
    } catch (error) {
      // The token is never returned; the row is deleted if the database still answers.
      await sessions.discard(sessionId).catch(() => undefined);
      throw error;
    }
    const change = current?.password !== user.password ? 'password' : current.status === 'forbidden' ? 'disabled' : null;
    if (change) await sessions.discard(sessionId);
    return change;
  }

  async function detailOf(resolved: ResolvedMember) {
    const team = await teams.findTeam(resolved.member.teamId);
    if (!team) throw Errors.unAuthorization('The team of this session no longer exists');
    return buildUserDetail(resolved, team);
  }

  const tooManyFailures = (seconds: number) => Errors.tooManyRequest(`Too many failed logins, try again in ${seconds} seconds`, seconds);

  /**
   * 10 failures in 10 minutes, per account and per IP, block further attempts (429). Each
   * attempt is reserved before the password is checked, so parallel guesses cannot pass the
   * limit together; a failed check keeps its reservation, anything else gives it back. An
   * address the account logged in from lately is not held by the account's limit (anyone can
   * fill it), only by its own.
   */
  async function login(input: { username: string; password: string; ip: string }) {
    const accountKey = `user:${input.username}`;
    const ipSlot = await limiter.reserve(`ip:${input.ip}`);
    if (!ipSlot.ok) throw tooManyFailures(ipSlot.retryAfterSeconds);
    const accountSlot = await limiter.reserve(accountKey);
    if (!accountSlot.ok) {
      let known = false;
      try {
        known = await loginAddresses.isKnown(input.username, input.ip, deps.now());
      } finally {
        if (!known) await limiter.release(ipSlot.slotId);
      }
      if (!known) throw tooManyFailures(accountSlot.retryAfterSeconds);
    }
    const heldSlots = accountSlot.ok ? [accountSlot.slotId, ipSlot.slotId] : [ipSlot.slotId];
    let passwordFailed = false;
    try {
      const user = await users.findByUsername(input.username);
      const valid = await verifyPassword(input.password, user ? user.password : await decoyPasswordHash());
      if (!user || !valid) {
        passwordFailed = true;
        throw Errors.unAuthUser('Invalid username or password');
      }
      if (user.status === 'forbidden') throw Errors.accountRefused('The account is disabled and cannot log in');
      await limiter.clear(accountKey);
      const resolved = await accounts.loginMember(user);
      const { sessionId, token } = await storeSession(resolved);
      const change = await changedSinceCheck(user, sessionId);
      if (change === 'disabled') throw Errors.accountRefused('The account is disabled and cannot log in');
      if (change === 'password') {
        // The password just checked is no longer the user's: refused as a wrong one.
        passwordFailed = true;
        throw Errors.unAuthUser('Invalid username or password');
      }
      await users.setLastLoginTmb(user._id, resolved.member._id);
      // Only a convenience for later lockouts: the login stands without it.
      await loginAddresses.remember(input.username, input.ip, deps.now()).catch((error: unknown) => deps.log.warn({ err: error }, 'the login address could not be remembered'));
      return { user: await detailOf(resolved), token };
    } finally {
      if (!passwordFailed) await Promise.all(heldSlots.map((slotId) => limiter.release(slotId)));
    }
  }

  async function logout(sessionId: string | undefined): Promise<void> {
    if (sessionId && isObjectIdHex(sessionId)) await sessions.revoke(sessionId);
  }

  /**
   * Checks the old password; the caller's session stays, every other one ends. The new hash is
   * written only over the hash that was checked (409 otherwise, nothing written).
   * Wrong old passwords are counted per session (10 per 10 minutes), not on the account's login
   * limit: anyone can fill that one by name, which would keep a logged-in owner from changing a
   * password they think has leaked. A stolen session still cannot guess without limit, and
   * cannot make new sessions without the password.
   */
  async function changePassword(input: { userId: string; sessionId?: string; oldPsw: string; newPsw: string }) {
    const user = await users.findById(input.userId);
    if (!user) throw Errors.unAuthorization('The user no longer exists');
    const guessKey = input.sessionId ? `pwchange:session:${input.sessionId}` : `pwchange:user:${user._id}`;
    const slot = await limiter.reserve(guessKey);
    if (!slot.ok) throw Errors.tooManyRequest(`Too many wrong old passwords, try again in ${slot.retryAfterSeconds} seconds`, slot.retryAfterSeconds);
    let passwordFailed = false;
    try {
      if (!(await verifyPassword(input.oldPsw, user.password))) {
        passwordFailed = true;
        throw Errors.accountRefused('The old password is wrong');
      }
      await limiter.clear(guessKey);
      // The password is proven, as by a login: the account's login count starts again.
      await limiter.clear(`user:${user.username}`);
      const written = await replacePassword({ users, sessions }, user._id, await hashPassword(input.newPsw), { keepSessionId: input.sessionId, expectedHash: user.password });
      // A reset or another change landed after the old-password check: that write stands (it ended this session).
      if (!written) throw Errors.conflict('The password was changed or reset while this change was made; log in again with the current password');
      return { user: publicUserDocument(user) };
    } finally {
      if (!passwordFailed) await limiter.release(slot.slotId);
    }
  }

  /**
   * Start-up: the root user and its team exist; DEFAULT_ROOT_PSW, when set, is root's password
   * (re-applied on every start; sessions end only when it actually changed). Without it, a
   * first start gives root a random password that is shown nowhere (secrets never reach the
   * logs): the operator sets one with DEFAULT_ROOT_PSW or `user reset-password`.
   */
  async function ensureRoot(defaultPassword: string | undefined): Promise<void> {
    let root = await users.findByUsername(ROOT_USERNAME);
    if (!root) {
      const password = defaultPassword ?? randomBytes(12).toString('base64url');
      try {
        await accounts.createUser({ username: ROOT_USERNAME, password }, { trusted: true });
      } catch (error) {
        // Another instance may have created it at the same moment.
        if (!(await users.findByUsername(ROOT_USERNAME))) throw error;
      }
      if (!defaultPassword) {
        deps.log.warn('created the root user with a random password that is not shown: set DEFAULT_ROOT_PSW, or run `npm run cli -- user reset-password --username root --password …`');
      }
      root = await users.findByUsername(ROOT_USERNAME);
      if (!root) throw new Error('root user could not be created');
    } else if (defaultPassword && !(await verifyPassword(defaultPassword, root.password))) {
      await replacePassword({ users, sessions }, root._id, await hashPassword(defaultPassword));
    }
    let member = await teams.findDefaultMember(root._id);
    if (!member) {
      const team = await teams.insertTeam({ name: 'My Team', ownerId: root._id });
      member = await teams.insertMember({ teamId: team._id, userId: root._id, name: 'Owner', role: 'owner', defaultTeam: true });
    }
    await teams.updateTeam(member.teamId, { balance: ROOT_TEAM_BALANCE });
  }

  return { login, logout, changePassword, ensureRoot, detailOf };
}

export type SessionService = ReturnType<typeof createSessionService>;
