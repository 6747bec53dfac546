import type { Db, Filter, ObjectId } from 'mongodb';
import type { TreeNode } from '../../domain/permission-inheritance.js';
import { findEachById } from '../../infra/mongo.js';
import { createMongoLocks, type LockHold } from '../../infra/mongo-lock.js';
import { oid, oids, type Plain, plain } from '../../infra/plain-record.js';

/** The fields every permission-managed resource document has (apps, datasets), as stored. */
interface StoredResource {
  _id: ObjectId;
  teamId: ObjectId;
  tmbId: ObjectId;
  parentId?: ObjectId | null;
  type: string;
  name?: string;
  inheritPermission?: boolean;
  defaultPermission?: number;
}

/**
 * What the tree reads of a resource: these fields only (an HTTP plugin app's document holds its
 * whole schema, up to ~1 MB, which a permission check of an app inheriting from it never needs).
 */
const TREE_FIELDS = { _id: 1, teamId: 1, tmbId: 1, parentId: 1, type: 1, name: 1, inheritPermission: 1, defaultPermission: 1 } as const;

/** A resource document as the repository returns it: ids as hex strings. */
export type ResourceDoc = Plain<StoredResource>;

/** Reads and inheritance-field writes on a resource collection, plus the per-team tree lock. */
export function createResourceTreeRepo(db: Db, collectionName: string, folderTypes: readonly string[]) {
  const resources = db.collection<StoredResource>(collectionName);
  const locks = createMongoLocks(db);

  return {
    /** The whole document (apps and datasets read it as their own record). */
    async findById(id: string): Promise<ResourceDoc | null> {
      const doc = await resources.findOne({ _id: oid(id) });
      return doc ? plain(doc) : null;
    },

    async findInTeam(teamId: string, ids: string[]): Promise<ResourceDoc[]> {
      if (ids.length === 0) return [];
      if (ids.length <= 8) {
        // Point reads by _id: FerretDB (SQLite) pushes only these down instead of scanning.
        const found = await findEachById(resources, oids(ids), TREE_FIELDS);
        return found.flatMap((doc) => (doc.teamId.toHexString() === teamId ? [plain(doc)] : []));
      }
      const docs = await resources.find({ teamId: oid(teamId), _id: { $in: oids(ids) } }, { projection: TREE_FIELDS }).toArray();
      return docs.map((doc) => plain(doc));
    },

    /** The team's folders: the only nodes inheritance and cycle checks need. */
    async folderTree(teamId: string): Promise<TreeNode[]> {
      const docs = await resources
        .find({ teamId: oid(teamId), type: { $in: [...folderTypes] } }, { projection: { _id: 1, parentId: 1, inheritPermission: 1, tmbId: 1 } })
        .toArray();
      return docs.map((doc) => ({
        id: doc._id.toHexString(),
        parentId: doc.parentId ? doc.parentId.toHexString() : null,
        isFolder: true,
        inheritPermission: doc.inheritPermission !== false,
        ownerTmbId: doc.tmbId.toHexString(),
      }));
    },

    async setDefaultPermission(teamId: string, ids: string[], defaultPermission: number): Promise<void> {
      if (ids.length === 0) return;
      await resources.updateMany({ teamId: oid(teamId), _id: { $in: oids(ids) } }, { $set: { defaultPermission } });
    },

    /**
     * Updates the resource's inheritance fields. With `expectedParentId` the write only happens
     * when the parent is still the one the decision was made on (returns false otherwise).
     */
    async updateResource(
      teamId: string,
      id: string,
      set: { defaultPermission?: number; inheritPermission?: boolean; parentId?: string | null },
      expectedParentId?: string | null,
    ): Promise<boolean> {
      const filter: Record<string, unknown> = { teamId: oid(teamId), _id: oid(id) };
      if (expectedParentId !== undefined) filter.parentId = expectedParentId === null ? null : oid(expectedParentId);
      const $set: Record<string, unknown> = { ...set };
      if (set.parentId !== undefined) $set.parentId = set.parentId === null ? null : oid(set.parentId);
      const result = await resources.updateOne(filter as Filter<StoredResource>, { $set });
      return result.matchedCount === 1;
    },

    /**
     * Serialises tree-changing operations of one team (moves, permission propagation), so two
     * concurrent moves cannot build a cycle. A lock document with an expiry survives a crash.
     * `run` asserts it still holds the lock before each write (mongo-lock.ts).
     */
    withTeamLock: <T>(teamId: string, run: (lock: LockHold) => Promise<T>): Promise<T> => locks.withLock(`${collectionName}:${teamId}`, run),
  };
}

export type ResourceTreeRepo = ReturnType<typeof createResourceTreeRepo>;
