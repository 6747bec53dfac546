import { type Db, ObjectId } from 'mongodb';
import { groupBy } from '../../../domain/group-by.js';
import { deleteEach } from '../../../infra/mongo.js';
import { createMongoLocks } from '../../../infra/mongo-lock.js';
import { oid } from '../../../infra/plain-record.js';

/**
 * Queued items per collection and model, kept beside the training queue: the pages the web
 * client polls during an import (the collection list's training amounts, the dataset's queue
 * count, the queue length of a model) and the queue metrics read a few small documents instead
 * of counting the queue, which FerretDB does by reading every queued item (seconds at 20,000).
 *
 * Every queue write records its change as a new delta document. An insert loses nothing when
 * writers race, where `$inc` would (FerretDB runs an update as read-then-write). A reader sums
 * the dataset's base document and the deltas it does not hold yet. Deltas are folded into the
 * base now and then, under a per-dataset lock; the base names the deltas it holds, so a crash
 * between writing it and deleting them counts nothing twice. A crash between a queue write and
 * its delta drifts the count: a dataset is recounted from the queue, behind the answer, once its
 * queue has been quiet for a while after a change, when a worker runs dry while it still shows
 * items, and hourly while it shows queued items.
 */
const COUNTS_COLLECTION = 'dataset_training_counts';
/** Unfolded deltas that make a fold worth its few commands. */
const FOLD_AT = 32;
/** No queue change for this long: the queue is quiet, recounting then is safe and cheap enough. */
const QUIET_MS = 60_000;
/** Counts still showing queued items are checked against the queue this often (drift with no change after it). */
const RECHECK_MS = 60 * 60_000;

/** Queued items of one collection and model (`m` may hold any character: a value, not a key). */
export interface CountEntry {
  c: string;
  m: string;
  n: number;
}
interface BaseDoc {
  /** `base:<datasetId>` */
  _id: string;
  teamId: ObjectId;
  datasetId: ObjectId;
  counts: CountEntry[];
  /** Deltas already in `counts` (deleted right after the fold; a crash may leave some). */
  folded: ObjectId[];
  /** The last change in `counts`, and the last recount from the queue. */
  changedAt: Date;
  checkedAt: Date;
}
interface DeltaDoc {
  _id: ObjectId;
  teamId: ObjectId;
  datasetId: ObjectId;
  counts: CountEntry[];
  /** When it was written (the writer's clock, to the millisecond). */
  at: Date;
}
type CountDoc = BaseDoc | DeltaDoc;

export const TRAINING_COUNT_INDEXES = [{ collection: COUNTS_COLLECTION, key: { teamId: 1, datasetId: 1 } }];

/** A change to one dataset's queue: queued items of a collection and model added (negative: removed). */
export interface QueueChange {
  teamId: string;
  datasetId: string;
  collectionId: string;
  model: string;
  delta: number;
}

/** Entries summed by collection and model (a space never occurs in a collection id). */
class Tally {
  readonly byKey = new Map<string, CountEntry>();
  add(c: string, m: string, n: number): void {
    const key = `${c} ${m}`;
    const entry = this.byKey.get(key);
    if (entry) entry.n += n;
    else this.byKey.set(key, { c, m, n });
  }
  addAll(entries: CountEntry[]): this {
    for (const { c, m, n } of entries) this.add(c, m, n);
    return this;
  }
  /** Non-zero entries (negative ones too: a removal's delta may land before its insert's). */
  entries(): CountEntry[] {
    return [...this.byKey.values()].filter((entry) => entry.n !== 0);
  }
}

export interface TrainingCountsOptions {
  /** The real counts of one dataset's queue by collection and model (a scan of it on FerretDB). */
  recount: (teamId: string, datasetId: string) => Promise<CountEntry[]>;
  /** Hears a failed fold or recount behind an answer (the answer itself stays right). */
  onError?: (error: unknown) => void;
  now?: () => Date;
}

export function createTrainingCounts(db: Db, options: TrainingCountsOptions) {
  const col = db.collection<CountDoc>(COUNTS_COLLECTION);
  const locks = createMongoLocks(db);
  const now = options.now ?? (() => new Date());
  const baseId = (datasetId: string) => `base:${datasetId}`;
  /** Deltas this process wrote per dataset since it last folded them. */
  const written = new Map<string, number>();
  /** Upkeep running per dataset in this process (one at a time). */
  const upkeep = new Map<string, Promise<void>>();

  const isBase = (doc: CountDoc): doc is BaseDoc => typeof doc._id === 'string';
  const readDocs = async (teamId: string, datasetId: string) => (await col.find({ teamId: oid(teamId), datasetId: oid(datasetId) }).toArray()) as CountDoc[];

  /** What the documents say: the counts, the deltas not folded yet, and when the queue last changed. */
  function summarise(docs: CountDoc[]) {
    const base = docs.find(isBase);
    const folded = new Set(base?.folded.map((id) => id.toHexString()));
    const live = docs.filter((doc): doc is DeltaDoc => !isBase(doc) && !folded.has(doc._id.toHexString()));
    const counts = new Tally().addAll(base?.counts ?? []);
    let changedAt = base?.changedAt.getTime() ?? 0;
    for (const delta of live) {
      counts.addAll(delta.counts);
      changedAt = Math.max(changedAt, delta.at.getTime());
    }
    return { base, live, counts, changedAt: new Date(changedAt), stale: docs.filter((doc) => !isBase(doc) && folded.has(doc._id.toHexString())) };
  }

  /**
   * Writes the base from the deltas (or from a recount of the queue), then deletes the deltas it
   * now holds. A recount takes the deltas seen before it as included: a write landing during the
   * scan may be counted twice, and the next quiet recount mends that. A holder that lost the lock
   * (stalled past its lease, say in a long scan) writes nothing more: its base, older than the new
   * holder's, would replace it. Its LockLostError goes to onError, as any failed upkeep.
   */
  function rewriteBase(teamId: string, datasetId: string, recount: boolean): Promise<void> {
    return locks.withLock(`${COUNTS_COLLECTION}:${datasetId}`, async (lock) => {
      // A recount is a check as of its start: a delta written during the scan is later than
      // that, so the next quiet read counts again (the scan may or may not have seen its items).
      const started = now();
      const seen = summarise(await readDocs(teamId, datasetId));
      // Without a base the deltas may miss items queued before counting began: count them all.
      if (!seen.base) recount = true;
      const counts = recount ? await options.recount(teamId, datasetId) : seen.counts.entries();
      const base: BaseDoc = {
        _id: baseId(datasetId),
        teamId: oid(teamId),
        datasetId: oid(datasetId),
        counts: counts.filter((entry) => entry.n !== 0),
        folded: seen.live.map((doc) => doc._id),
        changedAt: seen.changedAt,
        checkedAt: recount ? started : (seen.base?.checkedAt ?? new Date(0)),
      };
      lock.assertHeld();
      await col.replaceOne({ _id: base._id }, base, { upsert: true });
      const done = [...base.folded, ...seen.stale.map((doc) => doc._id)];
      lock.assertHeld();
      if (done.length > 0) await col.deleteMany({ teamId: base.teamId, datasetId: base.datasetId, _id: { $in: done } });
    });
  }

  /** Starts a fold or recount behind the answer, unless one runs for the dataset in this process. */
  function scheduleUpkeep(teamId: string, datasetId: string, recount: boolean): void {
    if (upkeep.has(datasetId)) return;
    written.delete(datasetId);
    const running = rewriteBase(teamId, datasetId, recount)
      .catch((error: unknown) => options.onError?.(error))
      .finally(() => upkeep.delete(datasetId));
    upkeep.set(datasetId, running);
  }

  async function recordChanges(changes: QueueChange[]): Promise<void> {
    const deltas = [...groupBy(changes, (change) => change.datasetId)]
      .map(([datasetId, group]) => {
        const tally = new Tally();
        for (const { collectionId, model, delta } of group) tally.add(collectionId, model, delta);
        return { datasetId, teamId: group[0]!.teamId, counts: tally.entries() };
      })
      .filter((delta) => delta.counts.length > 0);
    if (deltas.length === 0) return;
    await col.insertMany(deltas.map(({ datasetId, teamId, counts }) => ({ _id: new ObjectId(), teamId: oid(teamId), datasetId: oid(datasetId), counts, at: now() })));
    for (const { datasetId, teamId } of deltas) {
      const count = (written.get(datasetId) ?? 0) + 1;
      written.set(datasetId, count);
      if (count >= FOLD_AT) scheduleUpkeep(teamId, datasetId, false);
    }
  }

  /**
   * The dataset's summary, its queue counted first when it has no base yet (written as the base
   * when its lock can be had; else, another process counting or one that died holding the lock,
   * the count answers this read alone and a later one writes the base).
   */
  async function summaryWithBase(teamId: string, datasetId: string, docs: CountDoc[]) {
    const summary = summarise(docs);
    if (summary.base) return summary;
    try {
      await rewriteBase(teamId, datasetId, true);
    } catch (error) {
      options.onError?.(error);
      return { ...summary, counts: new Tally().addAll(await options.recount(teamId, datasetId)) };
    }
    return summarise(await readDocs(teamId, datasetId));
  }

  return {
    /**
     * Records queue changes (after the queue write they describe): one insert per dataset. Never
     * throws: the write it describes happened, and a count that missed it is recounted later.
     */
    async record(changes: QueueChange[]): Promise<void> {
      try {
        await recordChanges(changes);
      } catch (error) {
        options.onError?.(error);
      }
    },
    /**
     * Queued items per collection of a dataset (never below 0). The first read of a dataset
     * counts its queue; later ones read its count documents only.
     */
    async read(teamId: string, datasetId: string): Promise<Map<string, number>> {
      const summary = await summaryWithBase(teamId, datasetId, await readDocs(teamId, datasetId));
      if (summary.base && needsRecount(summary.base, summary.changedAt, summary.counts, now().getTime())) scheduleUpkeep(teamId, datasetId, true);
      else if (summary.live.length >= FOLD_AT) scheduleUpkeep(teamId, datasetId, false);
      return positiveSums(summary.counts, (entry) => entry.c);
    },

    /**
     * Queued items of every dataset together, by model (the queue metrics and queue lengths): one
     * read of all count documents. A dataset with changes but no base yet (queued before counting
     * began) is counted from its queue first, once.
     */
    async total(): Promise<Map<string, number>> {
      const docs = (await col.find({}).toArray()) as CountDoc[];
      const byDataset = groupBy(docs, (doc) => doc.datasetId.toHexString());
      const all = new Tally();
      for (const [datasetId, own] of byDataset) {
        const summary = await summaryWithBase(own[0]!.teamId.toHexString(), datasetId, own);
        // Per dataset and collection: a negative entry (a delta ahead of its insert's) hides nothing elsewhere.
        for (const entry of summary.counts.entries()) if (entry.n > 0) all.add(datasetId, entry.m, entry.n);
      }
      return positiveSums(all, (entry) => entry.m);
    },

    /**
     * Called when a worker finds nothing to claim after a busy spell: each dataset whose counts
     * changed since its last check and still show items (or a negative entry: items queued but
     * never counted) is recounted behind the answer once they have not changed for `settleMs`
     * (a removal racing the scan would be missed), so drift from a crash between a queue write
     * and its delta is mended seconds after the queue runs dry, not a quiet minute later. One
     * read of the count documents; a drained queue counts nothing. Returns how many datasets
     * changed too recently to recount yet: the caller asks again later.
     */
    async recheckAfterDrain(settleMs: number): Promise<number> {
      const docs = (await col.find({}).toArray()) as CountDoc[];
      const settledBefore = now().getTime() - settleMs;
      let waiting = 0;
      for (const [datasetId, own] of groupBy(docs, (doc) => doc.datasetId.toHexString())) {
        const { base, counts, changedAt } = summarise(own);
        if (counts.entries().length === 0 || !changedSinceCheck(base, changedAt)) continue;
        if (changedAt.getTime() > settledBefore) waiting += 1;
        else scheduleUpkeep(own[0]!.teamId.toHexString(), datasetId, true);
      }
      return waiting;
    },

    /**
     * Teams whose counts show queued items (a hint for sharing the worker between teams, not a
     * truth: items queued before counting began show nowhere, and items that gave up still count).
     * One read of the count documents; nothing is recounted.
     */
    async queuedTeams(): Promise<string[]> {
      const docs = (await col.find({}).toArray()) as CountDoc[];
      const teams = new Set<string>();
      for (const own of groupBy(docs, (doc) => doc.datasetId.toHexString()).values()) {
        const teamId = own[0]!.teamId.toHexString();
        if (!teams.has(teamId) && summarise(own).counts.entries().some((entry) => entry.n > 0)) teams.add(teamId);
      }
      return [...teams].sort();
    },

    /** Forgets deleted datasets' counts (their queue items went with them). */
    async dropDatasets(teamId: string, datasetIds: string[]): Promise<void> {
      await deleteEach(col, datasetIds.map((datasetId) => ({ teamId: oid(teamId), datasetId: oid(datasetId) })));
    },

    /** Resolves once the upkeep started so far has ended (tests, shutdown). */
    async settled(): Promise<void> {
      while (upkeep.size > 0) await Promise.all(upkeep.values());
    },
  };
}

export type TrainingCounts = ReturnType<typeof createTrainingCounts>;

/** The counts changed after their last recount (all of them, without a base yet). */
function changedSinceCheck(base: BaseDoc | undefined, changedAt: Date): boolean {
  return changedAt.getTime() > (base?.checkedAt.getTime() ?? -1);
}

/** Changed since the last check and quiet since, or showing queued items and unchecked for an hour. */
function needsRecount(base: BaseDoc, changedAt: Date, counts: Tally, now: number): boolean {
  if (changedSinceCheck(base, changedAt) && changedAt.getTime() < now - QUIET_MS) return true;
  return base.checkedAt.getTime() < now - RECHECK_MS && counts.entries().some((entry) => entry.n > 0);
}

/** Positive entries summed by `keyOf` (a collection, a model). */
function positiveSums(tally: Tally, keyOf: (entry: CountEntry) => string): Map<string, number> {
  const sums = new Map<string, number>();
  for (const entry of tally.entries()) if (entry.n > 0) sums.set(keyOf(entry), (sums.get(keyOf(entry)) ?? 0) + entry.n);
  return sums;
}
