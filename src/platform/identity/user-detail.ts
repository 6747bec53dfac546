import type { ResolvedMember } from './accounts.service.js';
import { serializeTeamPermission } from './team-permission.js';
import type { TeamRecord } from './teams.repo.js';

/** The reference's UserDetail (tokenLogin, loginByPassword), never with the password. */
export function buildUserDetail(resolved: ResolvedMember, team: TeamRecord) {
  const { user, member, teamPermission } = resolved;
  const permission = serializeTeamPermission(teamPermission);
  return {
    _id: user._id,
    username: user.username,
    avatar: user.avatar,
    timezone: user.timezone,
    promotionRate: user.promotionRate,
    openaiAccount: user.openaiAccount ?? null,
    team: {
      userId: user._id,
      teamId: team._id,
      teamName: team.name,
      memberName: member.name,
      avatar: team.avatar,
      balance: team.balance,
      tmbId: member._id,
      teamDomain: team.teamDomain ?? '',
      role: member.role,
      status: member.status,
      defaultTeam: member.defaultTeam,
      lafAccount: team.lafAccount ?? null,
      permission,
      notificationAccount: team.notificationAccount,
    },
    notificationAccount: team.notificationAccount,
    permission,
  };
}

/** The user document as updatePasswordByOld returns it: everything but the password. */
export function publicUserDocument(user: ResolvedMember['user']) {
  const { password: _password, ...rest } = user;
  return rest;
}
