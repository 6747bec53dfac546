import { createTeamPermissionRows } from '../permissions/resource-permissions.repo.js';
import { isObjectIdHex } from '../../infra/mongo.js';
import { type Db, ObjectId } from 'mongodb';
import type { IndexDeclaration } from '../../infra/mongo.js';
import type { TeamRole } from '../auth/types.js';
import { type CredentialRevocations, revokedIf } from './credential-epoch.js';

/** A `teams` document (reference names; `limit` holds the interval stamps). */
export interface TeamDoc {
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
export interface MemberDoc {
  _id: ObjectId;
  teamId: ObjectId;
  userId: ObjectId;
  name: string;
  role: TeamRole;
  status: 'waiting' | 'active' | 'reject' | 'leave';
  createTime: Date;
  defaultTeam: boolean;
}

/** The team-level row of `resource_permissions` (no resourceId), as the reference stores it. */
export const TEAM_INDEXES: IndexDeclaration[] = [
  { collection: 'teams', key: { name: 1 } },
  { collection: 'teams', key: { ownerId: 1 } },
  { collection: 'team_members', key: { teamId: 1, userId: 1 }, options: { unique: true } },
  { collection: 'team_members', key: { userId: 1 } },
];

export const DEFAULT_TEAM_AVATAR = '/icon/logo.svg';

/** Writes that change who a member is (removal, role, status, team permission) bump the credential epoch. */
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

  return {
    /**
     * Names and avatars of team members (team_members.name, users.avatar), for the collaborator
     * lists of the shared permission service (MemberProfiles).
     */
    async memberProfiles(teamId: string, tmbIds: string[]): Promise<Map<string, MemberProfile>> {
      const ids = tmbIds.filter(isObjectIdHex);
      if (ids.length === 0 || !isObjectIdHex(teamId)) return new Map();
      const found = await members
        .find({ _id: { $in: ids.map((id) => new ObjectId(id)) }, teamId: new ObjectId(teamId) }, { projection: { name: 1, userId: 1, status: 1, avatar: 1 } })
        .toArray();
      const userIds = found.map((m) => m.userId).filter((id): id is ObjectId => id instanceof ObjectId);
      const users = userIds.length ? await db.collection('users').find({ _id: { $in: userIds } }, { projection: { avatar: 1 } }).toArray() : [];
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
    findTeam: (id: ObjectId) => teams.findOne({ _id: id }),
    findMember: (id: ObjectId) => members.findOne({ _id: id }),
    findMemberOf: (teamId: ObjectId, userId: ObjectId) => members.findOne({ teamId, userId }),
    findDefaultMember: (userId: ObjectId) => members.findOne({ userId, defaultTeam: true, status: { $ne: 'leave' } }),
    findOwnerMember: (teamId: ObjectId) => members.findOne({ teamId, role: 'owner', status: { $ne: 'leave' } }),
    async insertTeam(input: { name: string; ownerId: ObjectId; balance?: number }): Promise<TeamDoc> {
      const doc: TeamDoc = {
        _id: new ObjectId(),
        name: input.name,
        ownerId: input.ownerId,
        defaultPermission: 4,
        avatar: DEFAULT_TEAM_AVATAR,
        createTime: new Date(),
        balance: input.balance ?? 0,
        limit: {},
      };
      await teams.insertOne(doc);
      return doc;
    },
    async insertMember(input: Omit<MemberDoc, '_id' | 'createTime' | 'status'>): Promise<MemberDoc> {
      const doc: MemberDoc = { _id: new ObjectId(), ...input, status: 'active', createTime: new Date() };
      await members.insertOne(doc);
      return doc;
    },
    async deleteTeam(id: ObjectId): Promise<void> {
      const result = await teams.deleteOne({ _id: id });
      await revokedIf(revocations, result.deletedCount > 0);
    },
    async deleteMember(id: ObjectId): Promise<void> {
      const member = await members.deleteOne({ _id: id });
      const rows = await permissions.deleteForMember(id);
      await revokedIf(revocations, member.deletedCount + rows > 0);
    },
    async updateMember(id: ObjectId, fields: Partial<Pick<MemberDoc, 'role' | 'status' | 'defaultTeam' | 'name'>>): Promise<void> {
      const result = await members.updateOne({ _id: id }, { $set: fields });
      await revokedIf(revocations, result.matchedCount > 0);
    },
    /** Other default-team flags of the user are cleared: exactly one default team per user. */
    async makeDefaultTeam(userId: ObjectId, memberId: ObjectId): Promise<void> {
      await members.updateMany({ userId, _id: { $ne: memberId } }, { $set: { defaultTeam: false } });
      await members.updateOne({ _id: memberId }, { $set: { defaultTeam: true } });
    },
    /** Writes only the given fields; `lafAccount: null` clears it. */
    async updateTeam(id: ObjectId, fields: Partial<Pick<TeamDoc, 'name' | 'avatar' | 'teamDomain' | 'lafAccount' | 'balance'>>): Promise<void> {
      const $set = Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
      if (Object.keys($set).length > 0) await teams.updateOne({ _id: id }, { $set });
    },
    async setLimitStamp(id: ObjectId, field: 'lastExportDatasetTime' | 'lastWebsiteSyncTime', at: Date): Promise<void> {
      await teams.updateOne({ _id: id }, { $set: { [`limit.${field}`]: at } });
    },
    async teamPermissionOf(teamId: ObjectId, tmbId: ObjectId): Promise<number | undefined> {
      return permissions.find(teamId, tmbId);
    },
    async setTeamPermission(teamId: ObjectId, tmbId: ObjectId, permission: number): Promise<void> {
      await revokedIf(revocations, await permissions.set(teamId, tmbId, permission));
    },
  };
}

export type TeamsRepo = ReturnType<typeof createTeamsRepo>;
