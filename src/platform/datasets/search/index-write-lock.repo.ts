import type { Db } from 'mongodb';
import { type IndexDeclaration, isDuplicateKeyError } from '../../../infra/mongo.js';

/**
 * What an index write touches: the data items and vectors it puts or removes (a repair logs what
 * MongoDB holds of them), and the collections whose content it deletes (a repair finishes that).
 */
export interface IndexWriteIntent {
  teamId: string;
  items?: string[];
  vectors?: string[];
  collections?: string[];
}

export const INDEX_WRITE_LOCK_INDEXES: IndexDeclaration[] = [{ collection: 'dataset_index_writes', key: { until: 1 } }];

interface LockDoc {
  /** The dataset. */
  _id: string;
  holder: string;
  /** The holder renews this while it writes; past it, the holder is taken for dead. */
  until: Date;
  /** The holder's intent, kept until a repair replaced it when the holder died. */
  intent?: IndexWriteIntent;
}

/**
 * The only code touching `dataset_index_writes`: one lock document per dataset whose search index
 * is being written, carrying the write's intent. A holder killed mid-write leaves it behind; the
 * next taker gets the intent to repair.
 */
export function createIndexWriteLocks(db: Db) {
  const col = db.collection<LockDoc>('dataset_index_writes');
  return {
    /**
     * Takes the dataset's lock for `holder`: `{ left }` with the intent a dead holder left (null
     * when there was none), or null while a live holder has it. A dead holder's intent stays in
     * the document until `intend` replaces it, so a taker killed before its repair leaves it too.
     */
    async take(datasetId: string, holder: string, intent: IndexWriteIntent | undefined, now: Date, until: Date): Promise<{ left: IndexWriteIntent | null } | null> {
      try {
        await col.insertOne({ _id: datasetId, holder, until, ...(intent ? { intent } : {}) });
        return { left: null };
      } catch (error) {
        if (!isDuplicateKeyError(error)) throw error;
      }
      const dead = await col.findOneAndUpdate({ _id: datasetId, until: { $lt: now } }, { $set: { holder, until } }, { returnDocument: 'before' });
      return dead ? { left: dead.intent ?? null } : null;
    },
    /** Replaces the holder's stored intent (before its first write; null: none). */
    async intend(datasetId: string, holder: string, intent: IndexWriteIntent | null): Promise<void> {
      await col.updateOne({ _id: datasetId, holder }, intent ? { $set: { intent } } : { $unset: { intent: '' } });
    },
    async renew(datasetId: string, holder: string, until: Date): Promise<void> {
      await col.updateOne({ _id: datasetId, holder }, { $set: { until } });
    },
    async release(datasetId: string, holder: string): Promise<void> {
      await col.deleteOne({ _id: datasetId, holder });
    },
    /** Datasets whose lock holder is taken for dead at `now` (the sweep repairs what they left). */
    async abandoned(now: Date): Promise<string[]> {
      const docs = await col.find({ until: { $lt: now } }, { projection: { _id: 1 } }).toArray();
      return docs.map((doc) => doc._id);
    },
  };
}

export type IndexWriteLocks = ReturnType<typeof createIndexWriteLocks>;
