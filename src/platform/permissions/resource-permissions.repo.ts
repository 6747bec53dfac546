import { type Db, ObjectId } from 'mongodb';
import type { Collaborator } from '../../domain/permission-inheritance.js';
import { bulkUpdate, deleteEach, type IndexDeclaration, isDuplicateKeyError } from '../../infra/mongo.js';
import { TREE_CHANGE_INDEXES } from './tree-changes.repo.js';

export type ResourceType = 'app' | 'dataset';

export const RESOURCE_PERMISSIONS = 'resource_permissions';

/**
 * Shared with the identity module's team rows (resourceType 'team'); same key as the reference.
 * Includes the journal of multi-document permission changes (tree-changes.repo.ts).
 */
export const RESOURCE_PERMISSION_INDEXES: IndexDeclaration[] = [
  { collection: RESOURCE_PERMISSIONS, key: { resourceType: 1, teamId: 1, tmbId: 1, resourceId: 1 }, options: { unique: true } },
  { collection: RESOURCE_PERMISSIONS, key: { resourceType: 1, teamId: 1, resourceId: 1 } },
  ...TREE_CHANGE_INDEXES,
];

interface PermissionRow {
  _id?: ObjectId;
  teamId: ObjectId;
  tmbId: ObjectId;
  resourceType: string;
  resourceId: ObjectId;
  permission: number;
}

const oid = (id: string) => new ObjectId(id);

/** The only code touching `resource_permissions` for apps and datasets. */
export function createResourcePermissionsRepo(db: Db, resourceType: ResourceType) {
  const rows = db.collection<PermissionRow>(RESOURCE_PERMISSIONS);
  const scope = (teamId: string) => ({ resourceType, teamId: oid(teamId) });

  /** Every row of these resources: one statement per resource (FerretDB reads every row of the team for an `$in`). */
  async function deleteRowsOf(teamId: string, resourceIds: string[]): Promise<void> {
    await deleteEach(rows, resourceIds.map((resourceId) => ({ ...scope(teamId), resourceId: oid(resourceId) })));
  }

  return {
    async listByResource(teamId: string, resourceId: string): Promise<Collaborator[]> {
      const found = await rows.find({ ...scope(teamId), resourceId: oid(resourceId) }, { projection: { tmbId: 1, permission: 1 } }).toArray();
      return found.map((row) => ({ tmbId: row.tmbId.toHexString(), permission: row.permission }));
    },

    /** The member's own rows on the given resources (all of the team's when omitted). */
    async memberRows(teamId: string, tmbId: string, resourceIds?: string[]): Promise<Map<string, number>> {
      const filter: Record<string, unknown> = { ...scope(teamId), tmbId: oid(tmbId) };
      if (resourceIds) filter.resourceId = { $in: resourceIds.map(oid) };
      const found = await rows.find(filter, { projection: { resourceId: 1, permission: 1 } }).toArray();
      return new Map(found.map((row) => [row.resourceId.toHexString(), row.permission]));
    },

    /** Every row of the team (for read models of the team's list): member → resource → value. */
    async teamRows(teamId: string): Promise<Map<string, Map<string, number>>> {
      const found = await rows.find(scope(teamId), { projection: { tmbId: 1, resourceId: 1, permission: 1 } }).toArray();
      const byMember = new Map<string, Map<string, number>>();
      for (const row of found) {
        const tmbId = row.tmbId.toHexString();
        const own = byMember.get(tmbId) ?? new Map<string, number>();
        own.set(row.resourceId.toHexString(), row.permission);
        byMember.set(tmbId, own);
      }
      return byMember;
    },

    /** Delete-then-insert per resource, as the reference's syncCollaborators. */
    async replace(teamId: string, resourceIds: string[], collaborators: Collaborator[]): Promise<void> {
      if (resourceIds.length === 0) return;
      await deleteRowsOf(teamId, resourceIds);
      const docs = resourceIds.flatMap((resourceId) =>
        collaborators.map((c) => ({ ...scope(teamId), tmbId: oid(c.tmbId), resourceId: oid(resourceId), permission: c.permission })),
      );
      if (docs.length === 0) return;
      // Upserts rather than inserts: a concurrent replace of the same resource must not fail on the unique key.
      await bulkUpdate(
        rows,
        docs.map((doc) => ({
          updateOne: {
            filter: { resourceType: doc.resourceType, teamId: doc.teamId, tmbId: doc.tmbId, resourceId: doc.resourceId },
            update: { $set: { permission: doc.permission } },
            upsert: true,
          },
        })),
        { ordered: false },
      );
    },

    async upsert(teamId: string, resourceId: string, collaborators: Collaborator[]): Promise<void> {
      if (collaborators.length === 0) return;
      await bulkUpdate(
        rows,
        collaborators.map((c) => ({
          updateOne: {
            filter: { ...scope(teamId), tmbId: oid(c.tmbId), resourceId: oid(resourceId) },
            update: { $set: { permission: c.permission } },
            upsert: true,
          },
        })),
        { ordered: false },
      );
    },

    async remove(teamId: string, resourceId: string, tmbIds: string[]): Promise<void> {
      if (tmbIds.length === 0) return;
      await rows.deleteMany({ ...scope(teamId), resourceId: oid(resourceId), tmbId: { $in: tmbIds.map(oid) } });
    },

    deleteForResources: deleteRowsOf,
  };
}

export type ResourcePermissionsRepo = ReturnType<typeof createResourcePermissionsRepo>;

/**
 * A member's team-wide permission: the `resourceType: 'team'` rows (no `resourceId`), as the
 * reference stores them. The identity module reads and writes them through this, so
 * `resource_permissions` has one owner.
 */
export function createTeamPermissionRows(db: Db) {
  const rows = db.collection<{ _id: ObjectId; teamId: ObjectId; tmbId: ObjectId; resourceType: 'team'; permission: number }>(RESOURCE_PERMISSIONS);
  const teamRow = (teamId: ObjectId, tmbId: ObjectId) => ({ resourceType: 'team' as const, teamId, tmbId, resourceId: { $exists: false } });
  return {
    async find(teamId: ObjectId, tmbId: ObjectId): Promise<number | undefined> {
      return (await rows.findOne(teamRow(teamId, tmbId)))?.permission;
    },
    /**
     * Answers whether a row was written (a revoking change). A new row's `_id` is the member's id
     * (a member is of one team): two first sets at once insert the same `_id`, one is refused
     * (11000) and writes into the row the other made. The unique key `{resourceType, teamId, tmbId,
     * resourceId}` does not tell on FerretDB, which keys the missing `resourceId` of team rows
     * apart (measured: 8 parallel first sets stored up to 8 rows); on MongoDB it refuses the second
     * too (missing is null). Rows the reference wrote keep their ids and are matched by the filter.
     */
    async set(teamId: ObjectId, tmbId: ObjectId, permission: number): Promise<boolean> {
      const filter = teamRow(teamId, tmbId);
      try {
        const result = await rows.updateOne(filter, { $set: { permission }, $setOnInsert: { _id: tmbId } }, { upsert: true });
        return result.matchedCount + result.upsertedCount > 0;
      } catch (error) {
        if (!isDuplicateKeyError(error)) throw error;
        return (await rows.updateOne(filter, { $set: { permission } })).matchedCount > 0;
      }
    },
    /** Answers how many rows went. */
    async deleteForMember(tmbId: ObjectId): Promise<number> {
      return (await rows.deleteMany({ resourceType: 'team', tmbId })).deletedCount;
    },
  };
}
