import { type Db, ObjectId } from 'mongodb';
import { createMongoLocks } from '../../../infra/mongo-lock.js';
import { oid } from '../../../infra/plain-record.js';

/**
 * Queued items per collection, kept beside the training queue: the pages the web client polls
 * during an import (the collection list's training amounts, the dataset's queue count) read a
 * few small documents instead of counting the queue, which FerretDB does by reading every queued
 * item of the dataset (seconds at 20,000).
 *
 * Every queue write records its change as a new delta document. An insert loses nothing when
 * writers race, where `$inc` would (FerretDB runs an update as read-then-write). A reader sums
 * the dataset's base document and the deltas it does not hold yet. Deltas are folded into the
 * base now and then, under a per-dataset lock; the base names the deltas it holds, so a crash
 * between writing it and deleting them counts nothing twice. A crash between a queue write and
 * its delta drifts the count: a dataset is recounted from the queue, behind the answer, once its
 * queue has been quiet for a while after a change.
 */
const COUNTS_COLLECTION = 'dataset_training_counts';
/** Unfolded deltas that make a fold worth its few commands. */
const FOLD_AT = 32;
/** No queue change for this long: the queue is quiet, recounting then is safe and cheap enough. */
const QUIET_MS = 60_000;

type Counts = Record<string, number>;
interface BaseDoc {
  /** `base:<datasetId>` */
  _id: string;
  teamId: ObjectId;
  datasetId: ObjectId;
  counts: Counts;
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
  counts: Counts;
}
type CountDoc = BaseDoc | DeltaDoc;

export const TRAINING_COUNT_INDEXES = [{ collection: COUNTS_COLLECTION, key: { teamId: 1, datasetId: 1 } }];

/** A change to one dataset's queue: queued items added (negative: removed) per collection. */
export interface QueueChange {
  teamId: string;
  datasetId: string;
  collectionId: string;
  delta: number;
}

export interface TrainingCountsOptions {
  /** The real per-collection counts of one dataset's queue (a scan of it on FerretDB). */
  recount: (teamId: string, datasetId: string) => Promise<Counts>;
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
    const counts: Counts = { ...base?.counts };
    let changedAt = base?.changedAt.getTime() ?? 0;
    for (const delta of live) {
      for (const [collectionId, n] of Object.entries(delta.counts)) counts[collectionId] = (counts[collectionId] ?? 0) + n;
      // An ObjectId holds whole seconds: the change is taken as late as it may have been, so a
      // recount in the same second does not pass for one made after it.
      changedAt = Math.max(changedAt, delta._id.getTimestamp().getTime() + 999);
    }
    return { base, live, counts, changedAt: new Date(changedAt), stale: docs.filter((doc) => !isBase(doc) && folded.has(doc._id.toHexString())) };
  }

  /**
   * Writes the base from the deltas (or from a recount of the queue), then deletes the deltas it
   * now holds. A recount takes the deltas seen before it as included: a write landing during the
   * scan may be counted twice, and the next quiet recount mends that.
   */
  function rewriteBase(teamId: string, datasetId: string, recount: boolean): Promise<void> {
    return locks.withLock(`${COUNTS_COLLECTION}:${datasetId}`, async () => {
      const seen = summarise(await readDocs(teamId, datasetId));
      // Without a base the deltas may miss items queued before counting began: count them all.
      if (!seen.base) recount = true;
      const counts = recount ? await options.recount(teamId, datasetId) : seen.counts;
      const at = now();
      const base: BaseDoc = {
        _id: baseId(datasetId),
        teamId: oid(teamId),
        datasetId: oid(datasetId),
        counts: Object.fromEntries(Object.entries(counts).filter(([, n]) => n !== 0)),
        folded: seen.live.map((doc) => doc._id),
        changedAt: seen.changedAt,
        checkedAt: recount ? at : (seen.base?.checkedAt ?? new Date(0)),
      };
      await col.replaceOne({ _id: base._id }, base, { upsert: true });
      const done = [...base.folded, ...seen.stale.map((doc) => doc._id)];
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

  return {
    /** Records queue changes (after the queue write they describe): one insert per dataset. */
    async record(changes: QueueChange[]): Promise<void> {
      const byDataset = new Map<string, { teamId: string; counts: Counts }>();
      for (const { teamId, datasetId, collectionId, delta } of changes) {
        if (delta === 0) continue;
        const entry = byDataset.get(datasetId) ?? { teamId, counts: {} };
        entry.counts[collectionId] = (entry.counts[collectionId] ?? 0) + delta;
        byDataset.set(datasetId, entry);
      }
      if (byDataset.size === 0) return;
      await col.insertMany(
        [...byDataset].map(([datasetId, { teamId, counts }]) => ({ _id: new ObjectId(), teamId: oid(teamId), datasetId: oid(datasetId), counts })),
      );
      for (const [datasetId, { teamId }] of byDataset) {
        const count = (written.get(datasetId) ?? 0) + 1;
        written.set(datasetId, count);
        if (count >= FOLD_AT) scheduleUpkeep(teamId, datasetId, false);
      }
    },

    /**
     * Queued items per collection of a dataset (never below 0). The first read of a dataset
     * counts its queue; later ones read its count documents only.
     */
    async read(teamId: string, datasetId: string): Promise<Map<string, number>> {
      let summary = summarise(await readDocs(teamId, datasetId));
      if (!summary.base) {
        await rewriteBase(teamId, datasetId, true);
        summary = summarise(await readDocs(teamId, datasetId));
      } else if (summary.changedAt > summary.base.checkedAt && summary.changedAt.getTime() < now().getTime() - QUIET_MS) {
        scheduleUpkeep(teamId, datasetId, true);
      } else if (summary.live.length >= FOLD_AT) {
        scheduleUpkeep(teamId, datasetId, false);
      }
      return new Map(Object.entries(summary.counts).flatMap(([collectionId, n]) => (n > 0 ? [[collectionId, n] as const] : [])));
    },

    /** Forgets deleted datasets' counts (their queue items went with them). */
    async dropDatasets(teamId: string, datasetIds: string[]): Promise<void> {
      for (const datasetId of datasetIds) await col.deleteMany({ teamId: oid(teamId), datasetId: oid(datasetId) });
    },

    /** Resolves once the upkeep started so far has ended (tests, shutdown). */
    async settled(): Promise<void> {
      while (upkeep.size > 0) await Promise.all(upkeep.values());
    },
  };
}

export type TrainingCounts = ReturnType<typeof createTrainingCounts>;
