import type { Db } from 'mongodb';
import { insertManyNew } from '../../infra/mongo.js';
import { createMongoLocks, type LockHold } from '../../infra/mongo-lock.js';
import { createSerialIncrements } from '../../infra/serial-increments.js';

/**
 * Per-team counters of what a plan limits (apps, datasets, stored vectors). A create reserves
 * room with one conditional `$inc` under a per-counter lock, so parallel creates can never pass
 * the limit together. A counter starts from the real count; deletes give room back. Drift (a
 * crash between reservation and insert) only over-counts, and is corrected from the real count
 * when a reservation is refused while nothing was reserved for a while.
 *
 * Vectors are counted after the fact (`add`, by the vector store's writes) instead of reserved:
 * counting them from the store is a scan of every vector on FerretDB (2 s at 20,000), which every
 * import and the plan page paid. A crash between a vector write and its `add` drifts either way,
 * so a vector counter quiet for a while is also recounted once an hour, behind the answer.
 */
interface TeamCounterDoc {
  _id: string;
  count: number;
  /** The last change (a reservation, or an `add`). */
  reservedAt: Date;
  /** The last recount (vectors). */
  checkedAt?: Date;
}

export type CountedKind = 'apps' | 'datasets' | 'vectors';

/** Reservations older than this have finished (or crashed): recounting then is safe. */
const QUIET_MS = 60_000;
/** How often a quiet vector counter is checked against the real count. */
const RECHECK_MS = 60 * 60_000;

export function createTeamCountersRepo(db: Db, now: () => Date = () => new Date()) {
  const counters = db.collection<TeamCounterDoc>('team_counters');
  const keyOf = (kind: CountedKind, teamId: string) => `${kind}:${teamId}`;
  // FerretDB 1.x runs an update as read-then-write: parallel $inc both match and one is lost. A
  // named lock per counter makes each change alone (harmless on MongoDB); a process's concurrent
  // `add`s share one write (infra/serial-increments.ts). A write sent right after taking the lock
  // needs no check; one after a wait (a recount) checks it still holds.
  // No upsert in `add`: a counter that does not exist yet is counted in full when first read.
  const changes = createSerialIncrements(
    createMongoLocks(db),
    (_id) => `team_counters:${_id}`,
    (_id, delta, alone) => alone(() => counters.updateOne({ _id }, { $inc: { count: delta }, $set: { reservedAt: now() } })),
  );
  const alone = changes.alone;

  async function tryIncrement(_id: string, adding: number, max: number, now: Date): Promise<boolean> {
    const result = await counters.updateOne({ _id, count: { $lte: max - adding } }, { $inc: { count: adding }, $set: { reservedAt: now } });
    return result.matchedCount === 1;
  }

  const checking = new Set<string>();

  /**
   * Sets a counter quiet for a while to the real count, unless it changed meanwhile; at most once a
   * minute (a team at its limit retrying must not scan the store each time). Returns the count then.
   */
  async function recountIfQuiet(_id: string, current: TeamCounterDoc, now: Date, recount: () => Promise<number>): Promise<number> {
    const since = now.getTime() - QUIET_MS;
    if (current.reservedAt.getTime() >= since || (current.checkedAt?.getTime() ?? 0) >= since) return current.count;
    const real = await recount();
    // Under the counter's lock like every other change of it (the scan before is not): on FerretDB
    // a change landing between this conditional write's read and its write would be overwritten.
    await alone(_id, () => counters.updateOne({ _id, count: current.count, reservedAt: current.reservedAt }, { $set: { count: real, checkedAt: now } }));
    return real;
  }

  return {
    /**
     * Adds `delta` (negative for deletes) to a counter, after the change it counts was written.
     * Concurrent changes of one process share one write per counter.
     */
    add(kind: CountedKind, teamId: string, delta: number): Promise<void> {
      if (delta === 0) return Promise.resolve();
      return changes.add(keyOf(kind, teamId), delta);
    },

    /**
     * The counter's value, counted with `recount` when it has none yet. A counter quiet for a while
     * and unchecked for an hour is recounted behind the answer (`onCheckFailed` hears a failure).
     */
    async read(kind: CountedKind, teamId: string, now: Date, recount: () => Promise<number>, onCheckFailed: (error: unknown) => void): Promise<number> {
      const _id = keyOf(kind, teamId);
      const current = await counters.findOne({ _id });
      if (!current) {
        const count = await recount();
        // Another process may have started it meanwhile: its document stays.
        await insertManyNew(counters, [{ _id, count, reservedAt: new Date(0), checkedAt: now }]);
        return count;
      }
      if ((current.checkedAt?.getTime() ?? 0) < now.getTime() - RECHECK_MS && !checking.has(_id)) {
        // One check at a time per counter in this process: a recount is a scan of the store.
        checking.add(_id);
        void recountIfQuiet(_id, current, now, recount)
          .catch(onCheckFailed)
          .finally(() => checking.delete(_id));
      }
      return current.count;
    },

    /** The real count when the counter has been quiet for a while (a refusal checks its drift), else the counter. */
    async correct(kind: CountedKind, teamId: string, now: Date, recount: () => Promise<number>): Promise<number> {
      const _id = keyOf(kind, teamId);
      const current = await counters.findOne({ _id });
      return current ? recountIfQuiet(_id, current, now, recount) : recount();
    },

    /**
     * Adds `adding` to the team's counter unless that would pass `max`. Returns the count seen
     * when refused, undefined when reserved. `recount` reads the real number from its owner.
     */
    reserve(kind: CountedKind, teamId: string, adding: number, max: number, now: Date, recount: () => Promise<number>): Promise<number | undefined> {
      const _id = keyOf(kind, teamId);
      return alone(_id, (lock) => reserveAlone(lock, _id, adding, max, now, recount));
    },
    /** Gives back room: a failed insert after its reservation, or deleted resources. */
    async release(kind: CountedKind, teamId: string, count: number): Promise<void> {
      if (count <= 0) return;
      const _id = keyOf(kind, teamId);
      await alone(_id, () => counters.updateOne({ _id, count: { $gte: count } }, { $inc: { count: -count } }));
    },
  };

  /** A lost lock stops it before a write after the recount: nothing was reserved, the caller may retry. */
  async function reserveAlone(lock: LockHold, _id: string, adding: number, max: number, now: Date, recount: () => Promise<number>): Promise<number | undefined> {
    if (await tryIncrement(_id, adding, max, now)) return undefined;
    const current = await counters.findOne({ _id });
    if (!current) {
      await insertManyNew(counters, [{ _id, count: await recount(), reservedAt: new Date(0) }]);
    } else if (current.reservedAt.getTime() < now.getTime() - QUIET_MS) {
      const real = await recount();
      if (real === current.count) return current.count;
      lock.assertHeld();
      // Only if nobody reserved since we read it: a reservation in flight is never forgotten.
      await counters.updateOne({ _id, count: current.count, reservedAt: current.reservedAt }, { $set: { count: real } });
    } else {
      return current.count;
    }
    lock.assertHeld();
    if (await tryIncrement(_id, adding, max, now)) return undefined;
    return (await counters.findOne({ _id }))?.count ?? 0;
  }
}

export type TeamCountersRepo = ReturnType<typeof createTeamCountersRepo>;
