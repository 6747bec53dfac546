import { createTeamPermissionRows } from '../permissions/resource-permissions.repo.js';
import { findEachById, isObjectIdHex } from '../../infra/mongo.js';
import { type Db, ObjectId } from 'mongodb';
import type { IndexDeclaration } from '../../infra/mongo.js';
import { oid, type Plain, plain, plainOrNull } from '../../infra/plain-record.js';
import type { TeamRole } from '../auth/types.js';
import { type CredentialRevocations, credentialSubject, revoking } from './credential-epoch.js';

/** A `teams` document (reference names; `limit` holds the interval stamps). */
interface TeamDoc {
  _id: ObjectId;
  name: string;
  ownerId: ObjectId;
  defaultPermission: number;
  avatar: string;
  createTime: Date;
  balance: number;
  teamDomain?: string;
  limit?: { lastExportDatasetTime?: Date; lastWebsiteSyncTime?: Date };
  lafAccount?: { token?: string; appid?: string; pat?: string } | null;
  notificationAccount?: string;
}

/** A `team_members` document. */
interface MemberDoc {
  _id: ObjectId;
  teamId: ObjectId;
  userId: ObjectId;
  name: string;
  role: TeamRole;
  status: 'waiting' | 'active' | 'reject' | 'leave';
  createTime: Date;
  defaultTeam: boolean;
}

/** A team and a member as the repository returns them: ids are hex strings. */
export type TeamRecord = Plain<TeamDoc>;
export type MemberRecord = Plain<MemberDoc>;

/** The team-level row of `resource_permissions` (no resourceId), as the reference stores it. */
export const TEAM_INDEXES: IndexDeclaration[] = [
  { collection: 'teams', key: { name: 1 } },
  { collection: 'teams', key: { ownerId: 1 } },
  { collection: 'team_members', key: { teamId: 1, userId: 1 }, options: { unique: true } },
  { collection: 'team_members', key: { userId: 1 } },
];

export const DEFAULT_TEAM_AVATAR = '/icon/logo.svg';

/** Writes that change who a member is (removal, role, status, team permission) move the credential epoch, naming the member (a team delete: the team). */
/** A member as collaborator lists show it. */
export interface MemberProfile {
  name: string;
  avatar: string;
  active: boolean;
}

export function createTeamsRepo(db: Db, revocations: CredentialRevocations) {
  const teams = db.collection<TeamDoc>('teams');
  const members = db.collection<MemberDoc>('team_members');
  const permissions = createTeamPermissionRows(db);
  const team = (doc: TeamDoc | null): TeamRecord | null => plainOrNull(doc);
  const member = (doc: MemberDoc | null): MemberRecord | null => plainOrNull(doc);
  const activeMember = { status: { $ne: 'leave' as const } };

  return {
    /**
     * Names and avatars of team members (team_members.name, users.avatar), for the collaborator
     * lists of the shared permission service (MemberProfiles).
     */
    async memberProfiles(teamId: string, tmbIds: string[]): Promise<Map<string, MemberProfile>> {
      const ids = tmbIds.filter(isObjectIdHex);
      if (ids.length === 0 || !isObjectIdHex(teamId)) return new Map();
      const found = await members
        .find({ _id: { $in: ids.map(oid) }, teamId: oid(teamId) }, { projection: { name: 1, userId: 1, status: 1, avatar: 1 } })
        .toArray();
      const userIds = found.map((m) => m.userId).filter((id): id is ObjectId => id instanceof ObjectId);
      const users = await findEachById(db.collection('users'), userIds, { avatar: 1 });
      const avatarOf = new Map(users.map((u) => [u._id.toHexString(), typeof u.avatar === 'string' ? u.avatar : '']));
      const memberAvatar = (m: { avatar?: unknown }) => (typeof m.avatar === 'string' ? m.avatar : '');
      return new Map(
        found.map((m) => [
          m._id.toHexString(),
          {
            name: typeof m.name === 'string' ? m.name : '',
            avatar: (m.userId instanceof ObjectId ? avatarOf.get(m.userId.toHexString()) : undefined) ?? memberAvatar(m as { avatar?: unknown }),
            active: m.status !== 'leave',
          },
        ]),
      );
    },
    findTeam: async (id: string) => team(await teams.findOne({ _id: oid(id) })),
    findMember: async (id: string) => member(await members.findOne({ _id: oid(id) })),
    findMemberOf: async (teamId: string, userId: string) => member(await members.findOne({ teamId: oid(teamId), userId: oid(userId) })),
    findDefaultMember: async (userId: string) => member(await members.findOne({ userId: oid(userId), defaultTeam: true, ...activeMember })),
    findOwnerMember: async (teamId: string) => member(await members.findOne({ teamId: oid(teamId), role: 'owner', ...activeMember })),
    async insertTeam(input: { name: string; ownerId: string; balance?: number }): Promise<TeamRecord> {
      const doc: TeamDoc = {
        _id: new ObjectId(),
        name: input.name,
        ownerId: oid(input.ownerId),
        defaultPermission: 4,
        avatar: DEFAULT_TEAM_AVATAR,
        createTime: new Date(),
        balance: input.balance ?? 0,
        limit: {},
      };
      await teams.insertOne(doc);
      return plain(doc);
    },
    async insertMember(input: Omit<MemberRecord, '_id' | 'createTime' | 'status'>): Promise<MemberRecord> {
      const doc: MemberDoc = { _id: new ObjectId(), ...input, teamId: oid(input.teamId), userId: oid(input.userId), status: 'active', createTime: new Date() };
      await members.insertOne(doc);
      return plain(doc);
    },
    async deleteTeam(id: string): Promise<void> {
      await revoking(revocations, () => teams.deleteOne({ _id: oid(id) }), (result) => result.deletedCount > 0, [credentialSubject.team(id)]);
    },
    async deleteMember(id: string): Promise<void> {
      const removeMemberAndRows = async () => (await members.deleteOne({ _id: oid(id) })).deletedCount + (await permissions.deleteForMember(oid(id)));
      await revoking(revocations, removeMemberAndRows, (removed) => removed > 0, [credentialSubject.member(id)]);
    },
    async updateMember(id: string, fields: Partial<Pick<MemberDoc, 'role' | 'status' | 'defaultTeam' | 'name'>>): Promise<void> {
      await revoking(revocations, () => members.updateOne({ _id: oid(id) }, { $set: fields }), (result) => result.matchedCount > 0, [credentialSubject.member(id)]);
    },
    /** Other default-team flags of the user are cleared: exactly one default team per user. */
    async makeDefaultTeam(userId: string, memberId: string): Promise<void> {
      await members.updateMany({ userId: oid(userId), _id: { $ne: oid(memberId) } }, { $set: { defaultTeam: false } });
      await members.updateOne({ _id: oid(memberId) }, { $set: { defaultTeam: true } });
    },
    /** Writes only the given fields; `lafAccount: null` clears it. */
    async updateTeam(id: string, fields: Partial<Pick<TeamDoc, 'name' | 'avatar' | 'teamDomain' | 'lafAccount' | 'balance'>>): Promise<void> {
      const $set = Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
      if (Object.keys($set).length > 0) await teams.updateOne({ _id: oid(id) }, { $set });
    },
    async setLimitStamp(id: string, field: 'lastExportDatasetTime' | 'lastWebsiteSyncTime', at: Date): Promise<void> {
      await teams.updateOne({ _id: oid(id) }, { $set: { [`limit.${field}`]: at } });
    },
    async teamPermissionOf(teamId: string, tmbId: string): Promise<number | undefined> {
      return permissions.find(oid(teamId), oid(tmbId));
    },
    async setTeamPermission(teamId: string, tmbId: string, permission: number): Promise<void> {
      await revoking(revocations, () => permissions.set(oid(teamId), oid(tmbId), permission), (written) => written, [credentialSubject.member(tmbId)]);
    },
    /** Removes the member's own team permission row: its role's default applies again. */
    async clearTeamPermission(tmbId: string): Promise<void> {
      await revoking(revocations, () => permissions.deleteForMember(oid(tmbId)), (removed) => removed > 0, [credentialSubject.member(tmbId)]);
    },
  };
}

export type TeamsRepo = ReturnType<typeof createTeamsRepo>;
