import { type Db, ObjectId } from 'mongodb';
import type { IndexDeclaration } from '../../infra/mongo.js';

/**
 * App inserts in progress (create, copy, folders, transitions): one record per insert, keyed
 * by the new app's id, written before its first write and deleted after the app document (the
 * last write). A record is a lease its insert renews while it runs; one whose lease ran out
 * belongs to an insert that crashed or failed, and is settled by app-insert-resume.ts.
 */
export const APP_INSERTS = 'app_inserts';

export const APP_INSERT_INDEXES: IndexDeclaration[] = [{ collection: APP_INSERTS, key: { expiresAt: 1 } }];

/** Longer than any pause of a running insert between two renewals (every third of it). */
export const APP_INSERT_LEASE_MS = 15_000;

interface AppInsertDoc {
  /** The new app's id. */
  _id: ObjectId;
  teamId: ObjectId;
  /** Plan room the insert reserved for itself (0 or 1), given back if the app never appears. */
  reserved: number;
  createTime: Date;
  expiresAt: Date;
}

export interface AppInsert {
  appId: string;
  teamId: string;
  reserved: number;
  createTime: Date;
  expiresAt: Date;
}

const oid = (id: string) => new ObjectId(id);

export function createAppInsertsRepo(db: Db, now: () => Date = () => new Date()) {
  const inserts = db.collection<AppInsertDoc>(APP_INSERTS);
  const leaseEnd = () => new Date(now().getTime() + APP_INSERT_LEASE_MS);

  return {
    async open(appId: string, teamId: string, reserved: number): Promise<void> {
      const at = now();
      await inserts.insertOne({ _id: oid(appId), teamId: oid(teamId), reserved, createTime: at, expiresAt: leaseEnd() });
    },

    /**
     * Extends a running lease; false once it ran out (or the record is gone): the insert then
     * belongs to the sweep, which may be settling it, and must not write on (nor revive it).
     */
    async renew(appId: string): Promise<boolean> {
      const at = now();
      return (await inserts.updateOne({ _id: oid(appId), expiresAt: { $gt: at } }, { $set: { expiresAt: leaseEnd() } })).matchedCount === 1;
    },

    /** Deletes the record; true for the one caller that deleted it (who then settles its room). */
    async close(appId: string): Promise<boolean> {
      return (await inserts.deleteOne({ _id: oid(appId) })).deletedCount === 1;
    },

    /** Records whose lease ran out, oldest first; `createdBefore` narrows them (start-up). */
    async expired(createdBefore?: Date): Promise<AppInsert[]> {
      const filter: Record<string, unknown> = { expiresAt: { $lt: now() } };
      if (createdBefore) filter.createTime = { $lt: createdBefore };
      const docs = await inserts.find(filter).sort({ createTime: 1 }).toArray();
      return docs.map((doc) => ({ appId: doc._id.toHexString(), teamId: doc.teamId.toHexString(), reserved: doc.reserved, createTime: doc.createTime, expiresAt: doc.expiresAt }));
    },

    /** The latest lease end among records created before `createdBefore` (none: undefined). */
    async lastLeaseEnd(createdBefore: Date): Promise<Date | undefined> {
      const [doc] = await inserts.find({ createTime: { $lt: createdBefore } }).sort({ expiresAt: -1 }).limit(1).toArray();
      return doc?.expiresAt;
    },
  };
}

export type AppInsertsRepo = ReturnType<typeof createAppInsertsRepo>;
