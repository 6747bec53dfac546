import { type Db, ObjectId } from 'mongodb';
import { EQUALITY_READS_UP_TO, type IndexDeclaration } from '../../../infra/mongo.js';
import { oid } from '../../../infra/plain-record.js';

/**
 * Which data items of a collection a write touched: their ids, or null for "any of them" (a
 * collection delete, or more items than a page refresh reads one by one).
 */
export interface DataListChange {
  teamId: string;
  collectionId: string;
  ids: string[] | null;
}

/** A recorded change as a data list reads it back. */
export interface RecordedChange {
  /** The change document's id: a view remembers those it has taken in. */
  id: string;
  ids: string[] | null;
}

interface ChangeDoc {
  _id: ObjectId;
  teamId: ObjectId;
  collectionId: ObjectId;
  ids: string[] | null;
  at: Date;
}

const COLLECTION = 'dataset_data_changes';

/** Touched ids a change names one by one; beyond, it says "any" (a refresh then reloads the collection). */
export const MAX_NAMED_IDS = EQUALITY_READS_UP_TO;

export const DATA_CHANGE_INDEXES: IndexDeclaration[] = [
  { collection: COLLECTION, key: { collectionId: 1, teamId: 1 } },
  { collection: COLLECTION, key: { at: 1 } },
];

/**
 * The recent changes of each collection's data items, so that a process whose data list view
 * is older than the collection's stamp reads only the items a write touched instead of the whole
 * collection again (on FerretDB 1.24, 0.6 s for 2,000 items: it decodes every document). One
 * small document per write, inserted after the write and before the stamp moves; kept for a
 * while (the read model reloads in full past its age limit, well inside that), then swept.
 */
export function createDataChangeLog(db: Db) {
  const col = db.collection<ChangeDoc>(COLLECTION);
  return {
    async record(changes: DataListChange[]): Promise<void> {
      if (changes.length === 0) return;
      const at = new Date();
      await col.insertMany(
        changes.map((change) => ({
          _id: new ObjectId(),
          teamId: oid(change.teamId),
          collectionId: oid(change.collectionId),
          ids: change.ids && change.ids.length <= MAX_NAMED_IDS ? change.ids : null,
          at,
        })),
      );
    },
    /** The changes of a collection still kept (any order). */
    async of(teamId: string, collectionId: string): Promise<RecordedChange[]> {
      const docs = await col.find({ collectionId: oid(collectionId), teamId: oid(teamId) }, { projection: { ids: 1 } }).toArray();
      return docs.map((doc) => ({ id: doc._id.toHexString(), ids: doc.ids ?? null }));
    },
    /** Forgets the changes recorded before `before` (the periodic sweep). */
    async sweep(before: Date): Promise<number> {
      return (await col.deleteMany({ at: { $lt: before } })).deletedCount;
    },
  };
}

export type DataChangeLog = ReturnType<typeof createDataChangeLog>;
