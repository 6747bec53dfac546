import { randomUUID } from 'node:crypto';
import type { Db } from 'mongodb';
import { withFollowUp } from './follow-up.js';
import { createLeasedRead } from './leased-read.js';
import { deleteEach, isDuplicateKeyError } from './mongo.js';

/** The collection of version stamps; every process of the deployment reads the same ones. */
export const VERSION_STAMPS_COLLECTION = 'version_stamps';

/** Stamps one bump replaces concurrently (the rest follow in turn). */
export const STAMPS_REPLACED_AT_ONCE = 8;

/** Leases held before an insert drops the expired ones (one entry per key ever read, ~240 B each). */
export const LEASES_PRUNED_PAST = 10_000;

/**
 * The stamps this process trusts until their lease ends, by key. A key read once (a collection
 * since deleted on another replica) is not kept forever: an insert past the bound drops the
 * expired leases. The bound then doubles past the live ones kept, so many live keys cost one
 * prune per doubling, not one per read; a lookup does no extra work.
 */
export class StampLeases {
  private readonly leases = new Map<string, { value: string; until: number }>();
  private pruneAt = LEASES_PRUNED_PAST;

  constructor(private readonly monotonic: () => number) {}

  /** The value while its lease runs at `at`. */
  valueAt(key: string, at: number): string | undefined {
    const lease = this.leases.get(key);
    return lease && lease.until > at ? lease.value : undefined;
  }

  set(key: string, value: string, until: number): void {
    this.leases.set(key, { value, until });
    if (this.leases.size > this.pruneAt) this.pruneExpired();
  }

  delete(key: string): void {
    this.leases.delete(key);
  }

  clear(): void {
    this.leases.clear();
  }

  /** Leases held, expired ones included until a prune. */
  get size(): number {
    return this.leases.size;
  }

  private pruneExpired(): void {
    const at = this.monotonic();
    for (const [key, lease] of this.leases) if (lease.until <= at) this.leases.delete(key);
    this.pruneAt = Math.max(LEASES_PRUNED_PAST, this.leases.size * 2);
  }
}

/** The lease of the app and dataset list stamps: writes that change a list wait this long. */
export const LIST_STAMP_LEASE_MS = 100;

export interface VersionStampsOptions {
  /**
   * How long a process trusts a stamp it has read without reading it again. A writer waits this
   * long after bumping, so when its response is sent no process still trusts the old value:
   * the next request after a write, on any replica, sees it. 0 reads on every call.
   */
  leaseMs: number;
  /** The wall clock, for the time a bump stores with the value. */
  now?: () => number;
  /**
   * The clock of leases: monotonic (default performance.now), so that a wall clock stepped back
   * (NTP, a resumed VM) cannot make a process trust a stamp longer than its lease.
   */
  monotonic?: () => number;
}

/**
 * Version stamps: one small document per key (`team:<id>:apps`, `auth`, ...) whose value
 * changes on every write that must invalidate what processes cached under that key. The value
 * is a fresh random string, not a counter: two concurrent bumps must both change it, and
 * FerretDB 1.24 may lose one of two concurrent `$inc` on one document.
 */
export function createVersionStamps(db: Db, options: VersionStampsOptions) {
  const stamps = db.collection<{ _id: string; value: string; at: Date }>(VERSION_STAMPS_COLLECTION);
  const now = options.now ?? (() => Date.now());
  const monotonic = options.monotonic ?? (() => performance.now());
  const leased = new StampLeases(monotonic);

  async function replaceStamp(key: string, at: Date): Promise<void> {
    try {
      await stamps.replaceOne({ _id: key }, { value: randomUUID(), at }, { upsert: true });
    } catch (error) {
      // Two first bumps raced to insert: the document exists now, so a plain replace lands.
      if (!isDuplicateKeyError(error)) throw error;
      await stamps.replaceOne({ _id: key }, { value: randomUUID(), at });
    }
  }

  async function fetch(key: string, started: number): Promise<string> {
    const found = await stamps.findOne({ _id: key });
    // A key never bumped has a stable value of its own: caches built on it stay valid.
    const value = found?.value ?? 'initial';
    if (options.leaseMs > 0) leased.set(key, value, started + options.leaseMs);
    return value;
  }

  return {
    /** The current value of a key (from the lease when it is still running). */
    read: createLeasedRead({ leaseMs: options.leaseMs, monotonic, leases: leased, read: fetch }),

    /** Changes the keys' values; resolves once no process can still trust the old ones. */
    async bump(...keys: string[]): Promise<void> {
      if (keys.length === 0) return;
      const at = new Date(now());
      // A few at a time: a dataset delete bumps one stamp per collection, and 50 update
      // statements in flight at once stall FerretDB 1.24 for good (infra/mongo.ts, bulkUpdate).
      for (let start = 0; start < keys.length; start += STAMPS_REPLACED_AT_ONCE) {
        await Promise.all(keys.slice(start, start + STAMPS_REPLACED_AT_ONCE).map((key) => replaceStamp(key, at)));
      }
      for (const key of keys) leased.delete(key);
      if (options.leaseMs > 0) await new Promise((resolve) => setTimeout(resolve, options.leaseMs));
    },

    /**
     * Deletes the keys' stamps: a deleted parent's, which nothing reads again (ids are never
     * reused, and readers go through the parent first). A removed key reads as never bumped. One
     * statement per key: FerretDB filters an `_id` equality in PostgreSQL, not an `$in`.
     */
    async remove(...keys: string[]): Promise<void> {
      await deleteEach(stamps, [...new Set(keys)].map((key) => ({ _id: key })));
      for (const key of keys) leased.delete(key);
    },

    /** Forgets the leases of this process (tests that move clocks). */
    forget(): void {
      leased.clear();
    },
  };
}

export type VersionStamps = ReturnType<typeof createVersionStamps>;

/**
 * Runs a write that cached views depend on, then `bump` (which tells every process): after a
 * write that `changed` something, and after a write that failed, since a write that failed
 * midway or lost its answer may have changed what it touched (a retry would then find nothing
 * to change and bump nothing). The write's own error is the one thrown.
 */
export function bumpAfterWrite<T>(write: () => Promise<T>, bump: () => Promise<void>, changed: (result: T) => boolean = () => true): Promise<T> {
  return withFollowUp(write, bump, changed);
}
