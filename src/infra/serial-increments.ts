import type { LockHold, MongoLocks } from './mongo-lock.js';

/**
 * Counters whose every change must land, on FerretDB 1.x as on MongoDB. FerretDB runs an update
 * as read-then-write of the whole document: two at once on one document can lose one (40 parallel
 * `$inc` left 2), and so can an `$inc` racing a `$set` of another field of it. So every write of a
 * counted document goes under one named lock per document (`alone`, across processes), and a
 * process's increments of one counter made while a write of it is in flight are carried together
 * by its next write (one lock at a time per counter and process, however many callers).
 */
export interface SerialIncrements {
  /**
   * Adds `delta` to counter `key`; resolves (or fails) with the write that carried it. Changes of
   * one counter summing to 0 while a write is in flight cost no write.
   */
  add(key: string, delta: number): Promise<void>;
  /** Runs `run` holding `key`'s lock: every other write of the counted document goes through it. */
  alone<T>(key: string, run: (lock: LockHold) => Promise<T>): Promise<T>;
}

/**
 * `write(key, delta, alone)` applies one summed increment; it takes the lock with `alone` around
 * its write (and may do work that needs no lock, such as a follow-up, outside it).
 */
export function createSerialIncrements(
  locks: MongoLocks,
  lockName: (key: string) => string,
  write: (key: string, delta: number, alone: <T>(run: (lock: LockHold) => Promise<T>) => Promise<T>) => Promise<unknown>,
  /** The 409's message when the lock stays taken (what is being changed, for the caller). */
  busy = 'Another change to this record is in progress, try again',
): SerialIncrements {
  const alone = <T>(key: string, run: (lock: LockHold) => Promise<T>) => locks.withLock(lockName(key), run, busy);

  interface Batch {
    delta: number;
    done: Promise<void>;
    settle: (error?: unknown) => void;
  }
  /** The next write's changes, by counter (not started yet). */
  const pending = new Map<string, Batch>();
  /** Counters with a writer running in this process. */
  const writing = new Set<string>();

  function batchOf(key: string): Batch {
    const existing = pending.get(key);
    if (existing) return existing;
    let settle!: Batch['settle'];
    const done = new Promise<void>((resolve, reject) => {
      settle = (error) => (error === undefined ? resolve() : reject(error));
    });
    const batch: Batch = { delta: 0, done, settle };
    pending.set(key, batch);
    return batch;
  }

  async function writeAll(key: string): Promise<void> {
    // Changes added in the same step as the first share its write.
    await Promise.resolve();
    try {
      for (let batch = pending.get(key); batch !== undefined; batch = pending.get(key)) {
        pending.delete(key);
        try {
          if (batch.delta !== 0) await write(key, batch.delta, (run) => alone(key, run));
          batch.settle();
        } catch (error) {
          // Only this write's callers hear it; changes added meanwhile get their own write.
          batch.settle(error ?? new Error(`The write of counter ${key} failed`));
        }
      }
    } finally {
      // In the same step as the loop's last look: a change added after it starts a new writer.
      writing.delete(key);
    }
  }

  return {
    add(key, delta) {
      const batch = batchOf(key);
      batch.delta += delta;
      if (!writing.has(key)) {
        writing.add(key);
        void writeAll(key);
      }
      return batch.done;
    },
    alone,
  };
}
