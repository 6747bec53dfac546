import { randomUUID } from 'node:crypto';
import type { Db } from 'mongodb';
import { type BackoffOptions, backoffDelay } from './backoff.js';
import { Errors } from './errors.js';
import { startLeaseRenewal } from './lease-renewal.js';
import { isDuplicateKeyError } from './mongo.js';

/** The collection of named locks; every process of the deployment sees the same ones. */
export const LOCKS_COLLECTION = 'resource_tree_locks';
const LOCK_TTL_MS = 15_000;
/**
 * How long a holder trusts its lock after sending its last renewal: a third of the TTL short of
 * when takers judge it lapsed, as they judge by their own wall clocks (a skew between replicas).
 */
const HOLD_TRUSTED_MS = LOCK_TTL_MS - LOCK_TTL_MS / 3;
const LOCK_WAIT_MS = 10_000;
const DEFAULT_BUSY = 'Another change to this folder tree is in progress, try again';
/** Short waits first (most holds take milliseconds), then at most 5 tries a second. */
const LOCK_RETRY: BackoffOptions = { firstMs: 10, maxMs: 200, factor: 1.5 };

interface LockDoc {
  _id: string;
  holder: string;
  /** The holder renews this while it works; past it, the holder is taken for dead. */
  expiresAt: Date;
  /** What the holder is doing, for whoever takes the lock after it died (see `acquire`). */
  payload?: unknown;
}

export interface LocksOptions {
  /** Where the locks live (default LOCKS_COLLECTION). */
  collection?: string;
  /** How long `acquire` and `withLock` wait for a live holder before a 409. */
  waitMs?: number;
  /** The clock of a holder's trust in its lock (default performance.now; tests move it). */
  monotonic?: () => number;
}

export interface AcquireOptions<P> {
  /** Stored with the lock; a taker after this holder died gets it as `left`. */
  payload?: P;
  /** The 409's message when the lock stays taken (what the caller was waiting for). */
  busy?: string;
  /** The caller's clock at the call (tests of expiry pass a later one); it advances with real time. */
  now?: Date;
}

/** Thrown by `assertHeld` once this process may no longer hold the lock it took. */
export class LockLostError extends Error {
  constructor(
    readonly key: string,
    why: string,
  ) {
    super(`Lost the lock ${key} (${why}): another process may be doing the same work, so this one stopped`);
    this.name = 'LockLostError';
  }
}

/** What work done under a lock can ask of it. */
export interface LockHold {
  /**
   * Throws LockLostError once this process cannot be sure it still holds the lock: a renewal
   * found it taken over, or none went through for most of the TTL (a stalled event loop, an
   * unreachable database: a taker may judge it lapsed). Work calls it before each write the lock guards.
   */
  assertHeld(): void;
}

/** A lock held by this process, renewed until released or abandoned. */
export interface HeldLock<P> extends LockHold {
  /** The payload of a holder that died with the lock (it stays stored until `carry` replaces it), or null. */
  readonly left: P | null;
  /** Replaces the stored payload (null: none). */
  carry(payload: P | null): Promise<void>;
  release(): Promise<void>;
  /** Stops renewing and keeps the lock: it lapses, and its next taker gets the stored payload as `left`. */
  abandon(): void;
}

/**
 * Named mutual exclusion across processes, kept in MongoDB (no multi-document transactions on
 * FerretDB). A lock document with an expiry survives a crash; a live holder keeps renewing it,
 * and one unrenewed past its expiry is taken over. Used to serialise changes to a folder tree
 * (moves, creates into a folder, folder deletes), a collection's link syncs, counter recounts,
 * one app's publishes, reverts and HTTP plugin updates, and (with a payload a dead holder hands
 * to the next) writes of a dataset's search index.
 */
export function createMongoLocks(db: Db, options: LocksOptions = {}) {
  const waitMs = options.waitMs ?? LOCK_WAIT_MS;
  const monotonic = options.monotonic ?? (() => performance.now());
  const locks = db.collection<LockDoc>(options.collection ?? LOCKS_COLLECTION);
  const lapsedAt = (now: Date) => ({ expiresAt: { $lt: now } });

  /**
   * One attempt: inserts the lock, or takes it over from a holder taken for dead, keeping that
   * holder's payload stored (a taker dying before it dealt with it leaves it to the next one).
   * Null while a live holder has it.
   */
  async function take(key: string, holder: string, payload: unknown, now: Date, expiresAt: Date): Promise<{ left: unknown } | null> {
    try {
      await locks.insertOne({ _id: key, holder, expiresAt, ...(payload === undefined ? {} : { payload }) });
      return { left: null };
    } catch (error) {
      if (!isDuplicateKeyError(error)) throw error;
    }
    const dead = await locks.findOneAndUpdate({ _id: key, ...lapsedAt(now) }, { $set: { holder, expiresAt } }, { returnDocument: 'before' });
    if (!dead) return null;
    const left = dead.payload ?? null;
    if (left === null && payload !== undefined) await locks.updateOne({ _id: key, holder }, { $set: { payload } });
    return { left };
  }

  async function acquireOrNull<P>(key: string, options: AcquireOptions<P>, wait: boolean): Promise<HeldLock<P> | null> {
    const holder = randomUUID();
    const started = Date.now();
    const clock = () => new Date((options.now ?? new Date(started)).getTime() + Date.now() - started);
    const expiry = () => new Date(clock().getTime() + LOCK_TTL_MS);
    for (let failures = 1; ; failures++) {
      const sentAt = monotonic();
      const taken = await take(key, holder, options.payload, clock(), expiry());
      if (taken) return held(key, holder, taken.left as P | null, expiry, sentAt);
      if (!wait) return null;
      if (Date.now() - started > waitMs) throw Errors.conflict(options.busy ?? DEFAULT_BUSY);
      // Jittered so waiters that met at one lock do not retry in step.
      await new Promise((resolve) => setTimeout(resolve, backoffDelay(failures, LOCK_RETRY) * (1 + Math.random())));
    }
  }

  /** `sentAt`: when the write that took the lock was sent (monotonic). */
  function held<P>(key: string, holder: string, left: P | null, expiry: () => Date, sentAt: number): HeldLock<P> {
    const mine = { _id: key, holder };
    let renewedAt = sentAt;
    let takenOver = false;
    const renewal = startLeaseRenewal(LOCK_TTL_MS / 3, async () => {
      const sent = monotonic();
      const { matchedCount } = await locks.updateOne(mine, { $set: { expiresAt: expiry() } });
      if (matchedCount > 0) renewedAt = Math.max(renewedAt, sent);
      else lost();
    });
    // A write to the holder's own lock document matched nothing: another process took it over.
    const lost = () => {
      takenOver = true;
      void renewal.stop();
    };
    return {
      left,
      assertHeld() {
        if (takenOver) throw new LockLostError(key, 'another process took it over');
        const since = monotonic() - renewedAt;
        if (since >= HOLD_TRUSTED_MS) throw new LockLostError(key, `no renewal went through for ${Math.round(since)} ms`);
      },
      async carry(payload) {
        const { matchedCount } = await locks.updateOne(mine, payload === null ? { $unset: { payload: '' } } : { $set: { payload } });
        if (matchedCount === 0) lost();
      },
      async release() {
        await renewal.stop();
        await locks.deleteOne(mine);
      },
      abandon: () => void renewal.stop(),
    };
  }

  /** Takes the lock, waiting for a live holder up to `waitMs` (then 409). */
  const acquire = async <P>(key: string, options: AcquireOptions<P> = {}): Promise<HeldLock<P>> => (await acquireOrNull(key, options, true))!;

  return {
    acquire,
    /** Takes the lock if no live holder has it; null otherwise. */
    tryAcquire: <P>(key: string, options: AcquireOptions<P> = {}): Promise<HeldLock<P> | null> => acquireOrNull(key, options, false),
    /**
     * Runs `run` holding the lock. `run` calls `lock.assertHeld()` before each write the lock
     * guards, so that it stops once another process took the lock over. `busy`: the 409's message
     * when the lock stays taken (what the caller was waiting for).
     */
    async withLock<T>(key: string, run: (lock: LockHold) => Promise<T>, busy = DEFAULT_BUSY): Promise<T> {
      const lock = await acquire(key, { busy });
      try {
        return await run(lock);
      } finally {
        // A release that fails leaves the lock to lapse by itself; the work's outcome is the
        // answer (an error here after work that landed made clients retry it a second time).
        await lock.release().catch(() => undefined);
      }
    },
    /** Keys of locks whose holders are taken for dead at `now` (a sweep takes them to finish what they left). */
    async lapsed(now = new Date()): Promise<string[]> {
      const docs = await locks.find(lapsedAt(now), { projection: { _id: 1 } }).toArray();
      return docs.map((doc) => doc._id);
    },
  };
}

export type MongoLocks = ReturnType<typeof createMongoLocks>;
