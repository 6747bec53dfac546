import { randomUUID } from 'node:crypto';
import type { Db } from 'mongodb';
import { Errors } from './errors.js';
import { isDuplicateKeyError } from './mongo.js';

/** The collection of named locks; every process of the deployment sees the same ones. */
export const LOCKS_COLLECTION = 'resource_tree_locks';
const LOCK_TTL_MS = 15_000;
const LOCK_WAIT_MS = 10_000;

/**
 * Named mutual exclusion across processes, kept in MongoDB (no multi-document transactions on
 * FerretDB). A lock document with an expiry survives a crash; a long holder keeps renewing it.
 * Used to serialise changes to a folder tree (moves, creates into a folder, folder deletes), a
 * collection's link syncs, counter recounts.
 */
export function createMongoLocks(db: Db, options: { waitMs?: number } = {}) {
  const waitMs = options.waitMs ?? LOCK_WAIT_MS;
  const locks = db.collection<{ _id: string; holder: string; expiresAt: Date }>(LOCKS_COLLECTION);

  return {
    /** `busy`: the 409's message when the lock stays taken (what the caller was waiting for). */
    async withLock<T>(key: string, run: () => Promise<T>, busy = 'Another change to this folder tree is in progress, try again'): Promise<T> {
      const holder = randomUUID();
      const deadline = Date.now() + waitMs;
      for (;;) {
        const expiresAt = new Date(Date.now() + LOCK_TTL_MS);
        try {
          await locks.insertOne({ _id: key, holder, expiresAt });
          break;
        } catch (error) {
          if (!isDuplicateKeyError(error)) throw error;
        }
        const stolen = await locks.findOneAndUpdate({ _id: key, expiresAt: { $lt: new Date() } }, { $set: { holder, expiresAt } });
        if (stolen) break;
        if (Date.now() > deadline) throw Errors.conflict(busy);
        await new Promise((resolve) => setTimeout(resolve, 15 + Math.random() * 20));
      }
      const renew = setInterval(() => {
        void locks.updateOne({ _id: key, holder }, { $set: { expiresAt: new Date(Date.now() + LOCK_TTL_MS) } }).catch(() => undefined);
      }, LOCK_TTL_MS / 3);
      renew.unref();
      try {
        return await run();
      } finally {
        clearInterval(renew);
        await locks.deleteOne({ _id: key, holder });
      }
    },
  };
}

export type MongoLocks = ReturnType<typeof createMongoLocks>;
