import { type Db, ObjectId } from 'mongodb';
import type { InheritanceWrite } from '../../domain/permission-inheritance.js';
import type { IndexDeclaration } from '../../infra/mongo.js';
import type { ResourceType } from './resource-permissions.repo.js';

/**
 * The journal of permission changes (a folder move rewrites the rows of its inheriting subtree;
 * a collaborator removal is one row): recorded before the first write, deleted after the last
 * write and the stamp bump. An entry still present was interrupted (crash, database error) and
 * is applied again, which bumps again (permission-writes.ts).
 */
export const TREE_CHANGES = 'resource_tree_changes';

/** A team's pending changes in the order decided (`pending`: oldest first, then `_id`). */
export const TREE_CHANGE_INDEXES: IndexDeclaration[] = [{ collection: TREE_CHANGES, key: { resourceType: 1, teamId: 1, createTime: 1, _id: 1 } }];

/** Indexes of earlier versions the ones above replace (a prefix of one of them): none reads them. */
export const RETIRED_TREE_CHANGE_INDEXES: IndexDeclaration[] = [{ collection: TREE_CHANGES, key: { resourceType: 1, teamId: 1, createTime: 1 } }];

interface TreeChangeDoc {
  _id: ObjectId;
  resourceType: ResourceType;
  teamId: ObjectId;
  /** JSON text, decoded only here: replayed exactly as planned, whatever FerretDB makes of nested lists. */
  writesJson: string;
  createTime: Date;
}

export interface TreeChange {
  id: string;
  teamId: string;
  writes: InheritanceWrite[];
  createTime: Date;
}

const oid = (id: string) => new ObjectId(id);

export function createTreeChangesRepo(db: Db, resourceType: ResourceType) {
  const changes = db.collection<TreeChangeDoc>(TREE_CHANGES);
  const decode = (doc: TreeChangeDoc): TreeChange => ({
    id: doc._id.toHexString(),
    teamId: doc.teamId.toHexString(),
    writes: JSON.parse(doc.writesJson) as InheritanceWrite[],
    createTime: doc.createTime,
  });

  return {
    async record(teamId: string, writes: InheritanceWrite[], now: Date): Promise<string> {
      const _id = new ObjectId();
      await changes.insertOne({ _id, resourceType, teamId: oid(teamId), writesJson: JSON.stringify(writes), createTime: now });
      return _id.toHexString();
    },

    /** The team's unfinished changes, oldest first (the order they were decided in). */
    async pending(teamId: string): Promise<TreeChange[]> {
      const docs = await changes.find({ resourceType, teamId: oid(teamId) }).sort({ createTime: 1, _id: 1 }).toArray();
      return docs.map(decode);
    },

    /** Teams with unfinished changes; `createdBefore` leaves out changes a live request may still be writing. */
    async teamsWithPending(createdBefore?: Date): Promise<string[]> {
      const filter: Record<string, unknown> = { resourceType };
      if (createdBefore) filter.createTime = { $lt: createdBefore };
      const docs = await changes.find(filter, { projection: { teamId: 1 } }).toArray();
      return [...new Set(docs.map((doc) => doc.teamId.toHexString()))];
    },

    async finish(id: string): Promise<void> {
      await changes.deleteOne({ _id: oid(id) });
    },
  };
}

export type TreeChangesRepo = ReturnType<typeof createTreeChangesRepo>;
