import type { Db } from 'mongodb';
import { createMongoLocks } from '../../../infra/mongo-lock.js';
import type { IndexDeclaration } from '../../../infra/mongo.js';

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

const COLLECTION = 'dataset_index_writes';
/** How long a writer waits for the dataset's lock before answering 409. */
const WAIT_MS = 30_000;

// The sweep lists the lapsed ones.
export const INDEX_WRITE_LOCK_INDEXES: IndexDeclaration[] = [{ collection: COLLECTION, key: { expiresAt: 1 } }];

/**
 * The only code naming `dataset_index_writes`: named locks (mongo-lock.ts), one per dataset whose
 * search index is being written, keyed by the dataset id and carrying the write's intent as
 * payload. A holder killed mid-write leaves it behind; the next taker gets the intent to repair.
 */
export const createIndexWriteLocks = (db: Db) => createMongoLocks(db, { collection: COLLECTION, waitMs: WAIT_MS });

/**
 * Locks a process of the previous version left (its own steps, an `until` expiry and an `intent`)
 * in the named locks' format, so that their intents are still repaired. Run at start-up.
 */
export async function upgradeIndexWriteLocks(db: Db): Promise<void> {
  await db.collection(COLLECTION).updateMany({ until: { $exists: true } }, { $rename: { until: 'expiresAt', intent: 'payload' } });
}

export type IndexWriteLocks = ReturnType<typeof createIndexWriteLocks>;
