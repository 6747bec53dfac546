import type { Db } from 'mongodb';
import { isDuplicateKeyError } from '../../infra/mongo.js';
import { createMongoLocks } from '../../infra/mongo-lock.js';

/**
 * Per-team counters of what a plan limits (apps, datasets). A create reserves room with one
 * conditional `$inc` under a per-counter lock, so parallel creates can never pass the limit
 * together. A counter starts from the real count; deletes give
 * room back. Drift (a crash between reservation and insert) only over-counts, and is corrected
 * from the real count when a reservation is refused while nothing was reserved for a while.
 */
interface TeamCounterDoc {
  _id: string;
  count: number;
  reservedAt: Date;
}

export type CountedKind = 'apps' | 'datasets';

/** Reservations older than this have finished (or crashed): recounting then is safe. */
const QUIET_MS = 60_000;

export function createTeamCountersRepo(db: Db) {
  const counters = db.collection<TeamCounterDoc>('team_counters');
  const keyOf = (kind: CountedKind, teamId: string) => `${kind}:${teamId}`;
  // FerretDB 1.x runs a conditional update as read-then-write: parallel $inc both match and
  // one is lost. A named lock per counter makes each change alone (harmless on MongoDB).
  const locks = createMongoLocks(db);
  const alone = <T>(_id: string, run: () => Promise<T>) => locks.withLock(`team_counters:${_id}`, run);

  async function tryIncrement(_id: string, adding: number, max: number, now: Date): Promise<boolean> {
    const result = await counters.updateOne({ _id, count: { $lte: max - adding } }, { $inc: { count: adding }, $set: { reservedAt: now } });
    return result.matchedCount === 1;
  }

  return {
    /**
     * Adds `adding` to the team's counter unless that would pass `max`. Returns the count seen
     * when refused, undefined when reserved. `recount` reads the real number from its owner.
     */
    reserve(kind: CountedKind, teamId: string, adding: number, max: number, now: Date, recount: () => Promise<number>): Promise<number | undefined> {
      const _id = keyOf(kind, teamId);
      return alone(_id, () => reserveAlone(_id, adding, max, now, recount));
    },
    /** Gives back room: a failed insert after its reservation, or deleted resources. */
    async release(kind: CountedKind, teamId: string, count: number): Promise<void> {
      if (count <= 0) return;
      const _id = keyOf(kind, teamId);
      await alone(_id, () => counters.updateOne({ _id, count: { $gte: count } }, { $inc: { count: -count } }));
    },
  };

  async function reserveAlone(_id: string, adding: number, max: number, now: Date, recount: () => Promise<number>): Promise<number | undefined> {
    if (await tryIncrement(_id, adding, max, now)) return undefined;
    const current = await counters.findOne({ _id });
    if (!current) {
      await counters.insertOne({ _id, count: await recount(), reservedAt: new Date(0) }).catch((error: unknown) => {
        if (!isDuplicateKeyError(error)) throw error;
      });
    } else if (current.reservedAt.getTime() < now.getTime() - QUIET_MS) {
      const real = await recount();
      if (real === current.count) return current.count;
      // Only if nobody reserved since we read it: a reservation in flight is never forgotten.
      await counters.updateOne({ _id, count: current.count, reservedAt: current.reservedAt }, { $set: { count: real } });
    } else {
      return current.count;
    }
    if (await tryIncrement(_id, adding, max, now)) return undefined;
    return (await counters.findOne({ _id }))?.count ?? 0;
  }
}

export type TeamCountersRepo = ReturnType<typeof createTeamCountersRepo>;
