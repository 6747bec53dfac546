import { Errors } from '../../infra/errors.js';
import { isDuplicateKeyError, requireHexId } from '../../infra/mongo.js';
import type { TeamRole } from '../auth/types.js';
import { hashPassword } from './password.js';
import { replacePassword } from './password-change.js';
import type { SessionsRepo } from './sessions.repo.js';
import { resolveTeamPermission } from './team-permission.js';
import type { MemberRecord, TeamRecord, TeamsRepo } from './teams.repo.js';
import type { UserRecord, UsersRepo } from './users.repo.js';

export const ROOT_USERNAME = 'root';

export interface CreateUserInput {
  username: string;
  password: string;
  /** Join this existing team (it becomes the user's default team) instead of creating one. */
  teamId?: string;
  role?: TeamRole;
  permission?: number;
}

export interface MemberIds {
  userId: string;
  teamId: string;
  tmbId: string;
}

/** A member with everything the auth result and user detail need. */
export interface ResolvedMember {
  user: UserRecord;
  member: MemberRecord;
  teamPermission: number;
  isRoot: boolean;
}

export const USERNAME_RULE = /^[^\s]{1,100}$/;
export const MIN_PASSWORD_LENGTH = 6;

/** `trusted` (root from DEFAULT_ROOT_PSW): the operator's choice of password length stands. */
function checkCredentials(username: string, password: string, trusted = false): void {
  if (!USERNAME_RULE.test(username)) throw Errors.missingParams("Invalid field 'username': 1 to 100 characters, no spaces");
  if (password.length < (trusted ? 1 : MIN_PASSWORD_LENGTH) || password.length > 200) {
    throw Errors.missingParams(`Invalid field 'password': ${MIN_PASSWORD_LENGTH} to 200 characters`);
  }
}

/** Users, teams and memberships: the rules shared by the CLI, the routes and the start-up task. */
export function createAccountsService(deps: { users: UsersRepo; teams: TeamsRepo; sessions: SessionsRepo }) {
  const { users, teams, sessions } = deps;

  async function teamOrFail(teamId: string): Promise<TeamRecord> {
    const team = await teams.findTeam(requireHexId(teamId, 'teamId'));
    if (!team) throw Errors.notFound(`Team ${teamId} not found`);
    return team;
  }

  /**
   * Without transactions: the team and membership are written before the user, so a crash
   * midway leaves at most an unreachable team or membership, never a user who cannot log in. A
   * failed write after the membership takes it back (with the team it made): left, a membership
   * of a user that never came into being stayed in the team, an owner row among them.
   */
  async function createUser(input: CreateUserInput, options: { trusted?: boolean } = {}): Promise<MemberIds> {
    checkCredentials(input.username, input.password, options.trusted);
    if (await users.findByUsername(input.username)) throw Errors.conflict(`User '${input.username}' already exists`);
    const joining = input.teamId ? await teamOrFail(input.teamId) : undefined;
    const userId = users.newId();
    const password = await hashPassword(input.password);
    const team = joining ?? (await teams.insertTeam({ name: 'My Team', ownerId: userId }));
    const role: TeamRole = joining ? (input.role ?? 'member') : 'owner';
    const member = await teams.insertMember({
      teamId: team._id,
      userId,
      name: joining ? input.username : 'Owner',
      role,
      defaultTeam: true,
    });
    try {
      if (input.permission !== undefined && role !== 'owner') await teams.setTeamPermission(team._id, member._id, input.permission);
      await users.insert({ _id: userId, username: input.username, password });
    } catch (error) {
      if (!joining) await teams.deleteTeam(team._id);
      await teams.deleteMember(member._id);
      if (isDuplicateKeyError(error)) throw Errors.conflict(`User '${input.username}' already exists`);
      throw error;
    }
    return { userId, teamId: team._id, tmbId: member._id };
  }

  /**
   * Adds the user to the team, or updates an existing membership. A role change without
   * `permission` removes the member's team permission row, so the new role's default applies
   * (a demoted admin kept a row of 7, and with it manage rights).
   */
  async function addMember(input: { teamId: string; username: string; role: TeamRole; permission?: number }): Promise<{ tmbId: string }> {
    const team = await teamOrFail(input.teamId);
    const user = await users.findByUsername(input.username);
    if (!user) throw Errors.notFound(`User '${input.username}' not found`);
    const existing = await teams.findMemberOf(team._id, user._id);
    let memberId: string;
    if (existing) {
      await teams.updateMember(existing._id, { role: input.role, status: 'active' });
      if (existing.role !== input.role && input.permission === undefined) await teams.clearTeamPermission(existing._id);
      memberId = existing._id;
    } else {
      const hasDefault = await teams.findDefaultMember(user._id);
      const member = await teams.insertMember({ teamId: team._id, userId: user._id, name: user.username, role: input.role, defaultTeam: !hasDefault });
      memberId = member._id;
    }
    if (input.permission !== undefined) await teams.setTeamPermission(team._id, memberId, input.permission);
    return { tmbId: memberId };
  }

  /** Sets a new password and ends every session of the user. */
  async function resetPassword(input: { username: string; password: string }): Promise<{ userId: string }> {
    checkCredentials(input.username, input.password);
    const user = await users.findByUsername(input.username);
    if (!user) throw Errors.notFound(`User '${input.username}' not found`);
    await replacePassword({ users, sessions }, user._id, await hashPassword(input.password));
    return { userId: user._id };
  }

  /**
   * Loads a member for a credential; null when the member, its user or its team is gone, or the
   * user is disabled (an account disabled in the database loses its sessions and keys within the
   * credential cache's age, not only its next login).
   */
  async function resolveMember(tmbId: string, expectedUserId?: string): Promise<ResolvedMember | null> {
    // With the user id known (sessions), member and user load in parallel.
    const [member, knownUser] = await Promise.all([teams.findMember(tmbId), expectedUserId ? users.findById(expectedUserId) : null]);
    if (!member || member.status === 'leave') return null;
    if (expectedUserId && member.userId !== expectedUserId) return null;
    const user = knownUser ?? (expectedUserId ? null : await users.findById(member.userId));
    if (!user || user.status === 'forbidden') return null;
    const isRoot = user.username === ROOT_USERNAME;
    let teamPermission = resolveTeamPermission({ role: member.role, isRoot });
    if (!isRoot && member.role !== 'owner') {
      const [row, team] = await Promise.all([teams.teamPermissionOf(member.teamId, member._id), teams.findTeam(member.teamId)]);
      if (!team) return null;
      teamPermission = resolveTeamPermission({ role: member.role, isRoot, row, teamDefault: team.defaultPermission });
    }
    return { user, member, teamPermission, isRoot };
  }

  /** The member a login lands in: the last used one if still active, else the default team. */
  async function loginMember(user: UserRecord): Promise<ResolvedMember> {
    const last = user.lastLoginTmbId ? await resolveMember(user.lastLoginTmbId, user._id) : null;
    if (last) return last;
    const fallback = await teams.findDefaultMember(user._id);
    const resolved = fallback ? await resolveMember(fallback._id, user._id) : null;
    if (!resolved) throw Errors.unAuthTeam('The user is not an active member of any team');
    return resolved;
  }

  return { createUser, addMember, resetPassword, resolveMember, loginMember };
}

export type AccountsService = ReturnType<typeof createAccountsService>;
