import type { Db } from 'mongodb';
import type { IndexDeclaration } from './mongo.js';
import { isDuplicateKeyError } from './mongo.js';

/**
 * Limits attempts per key (an account, an IP address) to `maxAttempts` per window. The state
 * lives in MongoDB, so every replica of the service shares it.
 *
 * An attempt is reserved BEFORE the costly check (a password verification): each window of a
 * key has `maxAttempts` numbered slots, and a reservation is the insert of one free slot's
 * document. Inserts of one `_id` are serialised by the unique index on every MongoDB-compatible
 * server (a conditional `$inc` is not: FerretDB 1.24 loses concurrent increments), so at most
 * `maxAttempts` checks run per window whatever the concurrency. A failed check keeps its slot and
 * marks it (`markFailed`); a success gives it back (`release`) or resets the key (`clear`).
 * A caller may wait (`waitMs`) while some slots are held by checks still in progress, so that
 * successes never count: it is refused only once every slot holds a recorded failure.
 *
 * Windows are aligned on the clock (window n covers [n·w, (n+1)·w)). No TTL index (FerretDB 1.24
 * has none): ended windows no longer count, and `deleteExpired` removes their slots periodically.
 */
interface AttemptSlotDoc {
  /** `<window>:<slot>:<key>`: unique per key, window and slot. */
  _id: string;
  key: string;
  window: number;
  slot: number;
  /** End of the window: the slot stops mattering then (for the periodic cleanup). */
  expiresAt: Date;
  /** Set once the check that holds the slot failed: the slot is not given back in this window. */
  failed?: boolean;
}

export interface AttemptLimiterOptions {
  collection: string;
  maxAttempts: number;
  windowMs: number;
  now: () => number;
  /** Told when a reservation is refused because the key's window is full (metrics). */
  onRefused?: (key: string) => void;
}

export interface ReserveOptions {
  /**
   * How long (ms, real time) to wait for a slot while not all of them hold failures, instead of
   * refusing at once (0: refuse when none is free).
   */
  waitMs?: number;
}

/** How often a waiting reservation looks for a free slot again (ms, plus up to as much jitter). */
const SLOT_POLL_MS = 20;

export type AttemptReservation = { ok: true; slotId: string } | { ok: false; retryAfterSeconds: number };

export function attemptIndexes(collection: string): IndexDeclaration[] {
  return [
    { collection, key: { key: 1, window: 1 }, options: { name: 'key_window' } },
    { collection, key: { expiresAt: 1 }, options: { name: 'expires' } },
  ];
}

export function createAttemptLimiter(db: Db, options: AttemptLimiterOptions) {
  const slots = db.collection<AttemptSlotDoc>(options.collection);
  const { maxAttempts, windowMs } = options;

  return {
    /** Takes one attempt for `key`, or says in how many seconds its window ends. */
    async reserve(key: string, reserveOptions: ReserveOptions = {}): Promise<AttemptReservation> {
      const deadline = performance.now() + (reserveOptions.waitMs ?? 0);
      for (;;) {
        const now = options.now();
        const window = Math.floor(now / windowMs);
        const expiresAt = new Date((window + 1) * windowMs);
        const held = await slots.find({ key, window }, { projection: { slot: 1, failed: 1 } }).toArray();
        const taken = new Set(held.map((doc) => doc.slot));
        for (let slot = 0; slot < maxAttempts; slot++) {
          if (taken.has(slot)) continue;
          const slotId = `${window}:${slot}:${key}`;
          try {
            await slots.insertOne({ _id: slotId, key, window, slot, expiresAt });
            return { ok: true, slotId };
          } catch (error) {
            // Another request took this slot a moment ago: try the next one.
            if (!isDuplicateKeyError(error)) throw error;
          }
        }
        // Slots held by checks in progress come back (a success) or turn into failures.
        const failures = held.filter((doc) => doc.failed).length;
        if (failures >= maxAttempts || performance.now() >= deadline) {
          options.onRefused?.(key);
          return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((expiresAt.getTime() - now) / 1000)) };
        }
        await new Promise((resolve) => setTimeout(resolve, SLOT_POLL_MS + Math.random() * SLOT_POLL_MS));
      }
    },

    /** Keeps a reservation whose check failed, marked as a failure for waiting reservations. */
    async markFailed(slotId: string): Promise<void> {
      await slots.updateOne({ _id: slotId }, { $set: { failed: true } });
    },

    /** Gives back a reservation whose check succeeded (it was not a failure). */
    async release(slotId: string): Promise<void> {
      await slots.deleteOne({ _id: slotId });
    },

    /** Forgets every attempt of `key` (a successful login resets the account's count). */
    async clear(key: string): Promise<void> {
      await slots.deleteMany({ key });
    },

    /** Removes the slots of ended windows; returns how many. */
    async deleteExpired(): Promise<number> {
      return (await slots.deleteMany({ expiresAt: { $lte: new Date(options.now()) } })).deletedCount;
    },
  };
}

export type AttemptLimiter = ReturnType<typeof createAttemptLimiter>;
