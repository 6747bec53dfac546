import { createHash } from 'node:crypto';
import { type Db, ObjectId } from 'mongodb';
import { groupBy } from '../../../domain/group-by.js';
import { deleteEach, type IndexDeclaration, insertManyNew } from '../../../infra/mongo.js';
import { oid, oids, plain } from '../../../infra/plain-record.js';
import { createTrainingCounts, type TrainingCountsOptions } from './training-counts.js';
import type { QueueChange } from './training-counts-fold.js';
import { type FailureOutcome, type NewTraining, type QueuedItem, type TrainingDoc, type TrainingRecord, trainingChars } from './training-records.js';
import { TRAINING_COUNT_INDEXES } from './training-counts.repo.js';
import { createTrainingTurns } from './training-turns.js';

/** lockTime of an item that gave up (failed too often): nobody claims it until its team unlocks it. */
const PERMANENT_LOCK = new Date('2998-05-05T00:00:00Z');
/** Items with a lockTime below it are live: a retry's backoff stays far below it, PERMANENT_LOCK above. */
const QUEUE_LIVE_BEFORE = new Date('2040-01-01T00:00:00Z');
/** lockTime of an item queued and never failed (or unlocked again). */
const QUEUED_AT = new Date('2000-01-01T00:00:00Z');
/**
 * Teams whose queued items one claim reads (one read each, in turn), before it fills what is left
 * of the batch from the head of the queue. One team's large import no longer holds every other
 * team's items back until it is trained.
 */
const TEAMS_PER_CLAIM = 8;
/**
 * A claim is taken for dead this many lock windows after its last renewal. Its worker renews it
 * every third of one; the second window lets a worker stall (an event loop, its database link),
 * or run on a clock behind the others', for 25 s by default instead of 10 before a second worker
 * takes its items and pays their model calls again.
 */
const CLAIM_LAPSE_WINDOWS = 2;

export type { FailureOutcome, NewTraining, QueuedItem, TrainingRecord } from './training-records.js';

/** The head of `docs` whose texts stay within `maxChars` together (the first one always). */
function withinChars<T extends Pick<TrainingDoc, 'q' | 'a' | 'indexes' | 'textChars'>>(docs: T[], maxChars: number): T[] {
  let chars = 0;
  let count = 0;
  for (const doc of docs) {
    chars += trainingChars(doc);
    if (count > 0 && chars > maxChars) break;
    count += 1;
  }
  return docs.slice(0, count);
}

export const TRAINING_INDEXES: IndexDeclaration[] = [
  { collection: 'dataset_trainings', key: { teamId: 1, datasetId: 1 } },
  // Failed items due again (every claim) and stopped ones (metrics, queue lengths by model).
  { collection: 'dataset_trainings', key: { failed: 1, stopped: 1 } },
  { collection: 'dataset_trainings', key: { mode: 1, lockTime: 1, weight: -1 } },
  { collection: 'dataset_trainings', key: { collectionId: 1 } },
  { collection: 'dataset_trainings', key: { lockTime: 1 } },
  { collection: 'dataset_training_claims', key: { lockTime: 1 } },
  ...TRAINING_COUNT_INDEXES,
];

/**
 * The only code touching `dataset_trainings`. Every write that adds or removes queue items records
 * how many, per collection, in the queue's counts (training-counts.ts): the pages polled during an
 * import read those instead of counting the queue.
 */
export function createTrainingRepo(db: Db, onCountError: (error: unknown) => void = () => undefined, countsOptions: Pick<TrainingCountsOptions, 'lockWaitMs'> = {}) {
  const col = db.collection<TrainingDoc>('dataset_trainings');
  /** `owner`: the claiming worker; `lockTime`: its last renewal (see CLAIM_LAPSE_WINDOWS). */
  const claims = db.collection<{ _id: ObjectId; teamId: ObjectId; owner?: string; lockTime: Date }>('dataset_training_claims');
  const counts = createTrainingCounts(db, {
    ...countsOptions,
    onError: onCountError,
    recount: async (teamId, datasetId) => {
      const rows = await countByCollectionAndModel({ teamId: oid(teamId), datasetId: oid(datasetId) });
      return rows.map((row) => ({ c: row._id.collectionId.toHexString(), m: row._id.model, n: row.n }));
    },
  });
  /** Items matching `filter` by collection and model. */
  const countByCollectionAndModel = (filter: Record<string, unknown>) =>
    col
      .aggregate<{ _id: { collectionId: ObjectId; model: string }; n: number }>([
        { $match: filter },
        { $group: { _id: { collectionId: '$collectionId', model: '$model' }, n: { $sum: 1 } } },
      ])
      .toArray();
  const change = (item: Pick<TrainingRecord, 'teamId' | 'datasetId' | 'collectionId' | 'model'>, delta: number): QueueChange => ({
    teamId: item.teamId,
    datasetId: item.datasetId,
    collectionId: item.collectionId,
    model: item.model,
    delta,
  });
  /**
   * Removes items one collection and model at a time, so that each removal counts exactly what it
   * took. One command per group holding a delete by `_id` per item: FerretDB finds each through
   * its `_id` index, where an `$in` would read every queued item.
   */
  async function removeItems(items: QueuedItem[]) {
    const changes: QueueChange[] = [];
    for (const group of groupBy(items, (item) => `${item.collectionId} ${item.model}`).values()) {
      const first = group[0]!;
      const deleted = await deleteEach(col, group.map((item) => ({ _id: oid(item._id), teamId: oid(item.teamId) })));
      changes.push(change(first, -deleted));
    }
    // The counts right after the queue, before the claims: a crash between a queue write and its
    // delta drifts the count until a recount (training-counts.ts), so nothing waits in between;
    // claims left behind lapse and are swept.
    await counts.record(changes);
    await deleteEach(claims, items.map((item) => ({ _id: oid(item._id) })));
  }
  const toDoc = (item: NewTraining) => ({
    ...item,
    teamId: oid(item.teamId),
    tmbId: oid(item.tmbId),
    datasetId: oid(item.datasetId),
    collectionId: oid(item.collectionId),
    dataId: item.dataId ? oid(item.dataId) : undefined,
    sourceId: item.sourceId ? oid(item.sourceId) : undefined,
    expireAt: new Date(),
    lockTime: QUEUED_AT,
    retryCount: 0,
  });
  /**
   * Leaves out items whose source item is still queued (it has not finished producing them). One
   * read by `_id` per source (a batch holds the pairs of a few QA items): FerretDB filters an
   * `_id` equality in PostgreSQL, not an `$in`.
   */
  async function waitingForNoSource(candidates: TrainingDoc[]): Promise<TrainingDoc[]> {
    const sources = [...new Set(candidates.flatMap((doc) => (doc.sourceId ? [doc.sourceId.toHexString()] : [])))];
    if (sources.length === 0) return candidates;
    const live = await Promise.all(sources.map((id) => col.findOne({ _id: oid(id) }, { projection: { _id: 1 } })));
    const queued = new Set(live.flatMap((doc) => (doc ? [doc._id.toHexString()] : [])));
    return candidates.filter((doc) => !doc.sourceId || !queued.has(doc.sourceId.toHexString()));
  }
  const turns = createTrainingTurns({ queuedTeams: () => counts.queuedTeams(), onError: onCountError });
  /**
   * Never-failed items, teams in turn: up to TEAMS_PER_CLAIM teams with queued items, from the
   * one after the team the last claim ended with, each giving what is left of `limit` (an equality
   * read on team and lockTime, which FerretDB filters in PostgreSQL, limit included); then the
   * rest from the head of the queue (teams the counts do not show, such as items queued before
   * counting began).
   */
  async function freshInTurn(limit: number): Promise<TrainingDoc[]> {
    const found = new Map<string, TrainingDoc>();
    for (const team of (await turns.inTurn()).slice(0, TEAMS_PER_CLAIM)) {
      if (found.size >= limit) break;
      const docs = await col.find({ teamId: oid(team), lockTime: QUEUED_AT }).limit(limit - found.size).toArray();
      turns.claimedFrom(team, docs.length);
      for (const doc of docs) found.set(doc._id.toHexString(), doc);
    }
    if (found.size < limit) {
      const head = await col.find({ lockTime: QUEUED_AT }).limit(limit).toArray();
      turns.metAtHead(new Set(head.map((doc) => doc.teamId.toHexString())));
      for (const doc of head) {
        if (found.size >= limit) break;
        found.set(doc._id.toHexString(), doc);
      }
    }
    return [...found.values()];
  }
  /**
   * Items claimable at `expired` (their lock window over): failed items whose backoff ran out
   * (read by their flags, at most `limit`), then never-failed items, teams in turn. Every read is
   * bounded; FerretDB filters the equalities in PostgreSQL (the backoff's range among the
   * retrying items only).
   */
  async function claimable(expired: Date, limit: number): Promise<TrainingDoc[]> {
    const due = await col.find({ failed: true, stopped: false, lockTime: { $lte: expired } }).limit(limit).toArray();
    if (due.length >= limit || QUEUED_AT > expired) return due;
    const known = new Set(due.map((doc) => doc._id.toHexString()));
    const fresh = await freshInTurn(limit - due.length);
    return [...due, ...fresh.filter((doc) => !known.has(doc._id.toHexString()))].slice(0, limit);
  }
  /**
   * Items of a model (or of all models) system-wide: live ones (queued or being trained) and
   * stopped ones (gave up). From the queue's counts less the stopped items, read by their flag:
   * neither reads the queue on FerretDB.
   */
  async function liveAndStopped(model?: string): Promise<{ live: number; stopped: number }> {
    const [byModel, stopped] = await Promise.all([counts.total(), col.countDocuments({ failed: true, stopped: true, ...(model === undefined ? {} : { model }) })]);
    const all = model === undefined ? [...byModel.values()].reduce((sum, n) => sum + n, 0) : (byModel.get(model) ?? 0);
    return { live: Math.max(0, all - stopped), stopped };
  }
  return {
    /** Queues items under the ids their caller gave them (so that it can take them back). */
    async insertMany(items: (NewTraining & { _id: string })[]): Promise<number> {
      if (items.length === 0) return 0;
      turns.queuedBy(new Set(items.map((item) => item.teamId)));
      let inserted = items.length;
      try {
        await col.insertMany(items.map((item) => ({ ...toDoc(item), _id: oid(item._id) })) as TrainingDoc[], { ordered: true });
      } catch (error) {
        // Ordered: the items before the failing one are queued, and counted.
        inserted = (error as { insertedCount?: number }).insertedCount ?? 0;
        throw error;
      } finally {
        await counts.record(items.slice(0, inserted).map((item) => change(item, 1)));
      }
      return inserted;
    },
    /**
     * Queues the rebuild of a data item under an id derived from the item, the target model and
     * the item's current vector ids: queueing it again (a retry, or two rebuild chains reaching
     * the same item) adds nothing, while a later rebuild of the item, which finds other vector
     * ids, gets a new id (the rebuild's vector ids derive from it). False when it was queued already.
     */
    async insertRebuild(item: NewTraining & { dataId: string }, vectorIds: string[]): Promise<boolean> {
      const _id = derivedId(oid(item.dataId), `rebuild\u0000${item.model}\u0000${vectorIds.join('\u0000')}`);
      const inserted = await insertManyNew(col, [{ ...toDoc(item), _id }] as TrainingDoc[]);
      turns.queuedBy([item.teamId]);
      await counts.record([change(item, inserted)]);
      return inserted === 1;
    },
    /**
     * Queues the items a source (QA) item produced, under ids derived from the source and each
     * item's text: inserting them again (a retry) adds nothing. They carry `sourceId` and wait
     * until the source item is deleted.
     */
    async insertDerived(source: QueuedItem, items: NewTraining[]): Promise<number> {
      const sourceId = oid(source._id);
      const inserted = await insertManyNew(
        col,
        items.map((item) => ({
          ...toDoc({ ...item, datasetId: source.datasetId, collectionId: source.collectionId, sourceId: source._id }),
          _id: derivedId(sourceId, `${item.q}\u0000${item.a}`),
        })) as TrainingDoc[],
      );
      turns.queuedBy([source.teamId]);
      // One push's items share a model (the dataset's vector model), not the source's (an LLM).
      if (items[0]) await counts.record([change({ ...source, model: items[0].model }, inserted)]);
      return inserted;
    },
    /**
     * Keeps the LLM's pairs on a QA item (first answer wins); returns the stored pairs, or null
     * when the item is gone.
     */
    async storeQaPairs(id: string, pairs: { q: string; a: string }[]): Promise<{ q: string; a: string }[] | null> {
      await col.updateOne({ _id: oid(id), qaPairs: { $exists: false } }, { $set: { qaPairs: pairs } });
      const doc = await col.findOne({ _id: oid(id) }, { projection: { qaPairs: 1 } });
      return doc ? (doc.qaPairs ?? pairs) : null;
    },
    /**
     * Claims up to `limit` items for `owner` in one go: candidates are read once (retries due,
     * then teams in turn: claimable), then claimed with one insertMany (another worker may win
     * some). Items sharing the first candidate's mode class and model form the batch, as many as
     * fit `maxChars` characters of text (what one batch embeds; the first item always); items
     * whose source item is still queued wait.
     */
    async claimBatch(now: Date, lockMs: number, limit: number, owner = 'anonymous', maxChars = Number.POSITIVE_INFINITY): Promise<TrainingRecord[]> {
      const expired = new Date(now.getTime() - lockMs);
      // Claims of crashed workers lapse; their items become claimable again.
      await claims.deleteMany({ lockTime: { $lte: new Date(now.getTime() - CLAIM_LAPSE_WINDOWS * lockMs) } });
      const candidates = await waitingForNoSource(await claimable(expired, limit * 2));
      const first = candidates[0];
      if (!first) return [];
      const wanted = withinChars((first.mode === 'qa' ? [first] : candidates.filter((c) => c.mode !== 'qa' && c.model === first.model)).slice(0, limit), maxChars);
      // A claim is an insert keyed by the item id: the unique _id makes it atomic, and one
      // insertMany is far cheaper than per-item updates on FerretDB. Duplicates = another
      // worker's items.
      let taken = new Set(wanted.map((doc) => doc._id.toHexString()));
      const inserted = await insertManyNew(
        claims,
        wanted.map((doc) => ({ _id: doc._id, teamId: doc.teamId, owner, lockTime: now })),
      );
      if (inserted < wanted.length) {
        const mine = await claims.find({ _id: { $in: wanted.map((doc) => doc._id) }, owner, lockTime: now }).toArray();
        taken = new Set(mine.map((doc) => doc._id.toHexString()));
      }
      return wanted.filter((doc) => taken.has(doc._id.toHexString())).map((doc) => plain({ ...doc, lockTime: now }));
    },
    /** Keeps a worker's claims alive while it works on them (a crashed worker's lapse). */
    async renewClaims(ids: string[], owner: string, lockTime: Date) {
      if (ids.length > 0) await claims.updateMany({ _id: { $in: oids(ids) }, owner }, { $set: { lockTime } });
    },
    /** Ends claims (item done, or failure recorded). */
    async release(ids: string[]) {
      if (ids.length > 0) await claims.deleteMany({ _id: { $in: oids(ids) } });
    },
    /** Removes finished (or pointless) items and their claims. */
    async deleteItems(items: QueuedItem[]) {
      if (items.length > 0) await removeItems(items);
    },
    /**
     * Records a failure and ends its claim. A retried item becomes claimable again once its
     * `lockTime` is a lock window old (see claimBatch); one giving up is locked for good
     * (PERMANENT_LOCK, flagged stopped) until its team unlocks it.
     */
    async recordFailure(id: string, errorMsg: string, outcome: FailureOutcome) {
      const lockTime = outcome.givingUp ? PERMANENT_LOCK : outcome.lockTime;
      await col.updateOne({ _id: oid(id) }, { $set: { errorMsg, failed: true, stopped: outcome.givingUp, lockTime }, $inc: { retryCount: 1 } });
      await claims.deleteOne({ _id: oid(id) });
    },
    /** Flags items that failed before the flags existed (run at start; cheap when none are queued). */
    async flagEarlierFailures(): Promise<number> {
      const unflagged = { errorMsg: { $exists: true }, stopped: { $exists: false } };
      const [gaveUp, retrying] = await Promise.all([
        col.updateMany({ ...unflagged, lockTime: { $gte: QUEUE_LIVE_BEFORE } }, { $set: { failed: true, stopped: true } }),
        col.updateMany({ ...unflagged, lockTime: { $lt: QUEUE_LIVE_BEFORE } }, { $set: { failed: true, stopped: false } }),
      ]);
      return gaveUp.modifiedCount + retrying.modifiedCount;
    },
    async findById(id: string): Promise<TrainingRecord | null> {
      const doc = await col.findOne({ _id: oid(id) });
      return doc ? plain(doc) : null;
    },
    /**
     * Removes the items of collections being deleted, one collection and model at a time (each
     * removal counted). The models come from a read of the collection's items; an item queued
     * after it stays, and the worker drops it (its collection is gone) and counts it then.
     * Rebuild items stay too: each is a link of its dataset's rebuild chain, which the worker
     * hands on to the next flagged item as it drops it (they write no new data items meanwhile).
     */
    async deleteByCollections(teamId: string, collections: { _id: string; datasetId: string }[]) {
      const changes: QueueChange[] = [];
      for (const collection of collections) {
        const scope = { teamId: oid(teamId), collectionId: oid(collection._id) };
        for (const { model } of (await countByCollectionAndModel(scope)).map((row) => row._id)) {
          const { deletedCount } = await col.deleteMany({ ...scope, model, dataId: { $exists: false } });
          changes.push(change({ teamId, datasetId: collection.datasetId, collectionId: collection._id, model }, -deletedCount));
        }
      }
      await counts.record(changes);
    },
    /** One statement per dataset: FerretDB filters an equality in PostgreSQL, where an `$in` reads the whole queue. */
    async deleteByDatasets(teamId: string, datasetIds: string[]) {
      await deleteEach(col, oids(datasetIds).map((datasetId) => ({ teamId: oid(teamId), datasetId })));
      await counts.dropDatasets(teamId, datasetIds);
    },
    /** Exact: a scan of the dataset's queue on FerretDB (the rebuild's check that nothing is queued). */
    async countByDataset(teamId: string, datasetId: string): Promise<number> {
      return col.countDocuments({ teamId: oid(teamId), datasetId: oid(datasetId) });
    },
    /** Queued items per collection of one dataset, from the queue's counts (a few small documents). */
    async countedByCollection(teamId: string, datasetId: string): Promise<Map<string, number>> {
      return counts.read(teamId, datasetId);
    },
    /** A worker ran dry: recounts datasets still showing items (training-counts.ts); returns how many must wait. */
    recheckCountsAfterDrain: (settleMs: number) => counts.recheckAfterDrain(settleMs),
    /** Resolves once count upkeep started behind answers has ended (tests, shutdown). */
    countsSettled: () => counts.settled(),
    /** Live (not stopped) items using a model, system-wide, as the reference counts. */
    async countLiveByModel(model: string): Promise<number> {
      return (await liveAndStopped(model)).live;
    },
    async failedItems(teamId: string, datasetId: string, limit = 20): Promise<TrainingRecord[]> {
      const docs = await col
        .find({ teamId: oid(teamId), datasetId: oid(datasetId), failed: true })
        .limit(limit)
        .toArray();
      return docs.map((doc) => plain(doc));
    },
    /** Queue figures for metrics, system-wide: items waiting or being trained, and items that gave up after too many failures. */
    async queueFigures(): Promise<{ queued: number; failed: number }> {
      const { live, stopped } = await liveAndStopped();
      return { queued: live, failed: stopped };
    },
    /** When the oldest live item was queued (expireAt is set at insertion): a read of the whole queue on FerretDB. */
    async oldestQueuedAt(): Promise<Date | null> {
      const oldest = await col.find({ lockTime: { $lt: QUEUE_LIVE_BEFORE } }, { projection: { expireAt: 1 } }).sort({ _id: 1 }).limit(1).next();
      return oldest?.expireAt ?? null;
    },
    /**
     * Makes every locked item of the team claimable now, with a fresh retry budget. Only failed
     * items are locked (a failure is the only other writer of lockTime): the update reads those,
     * by their flag, not the team's whole queue. Claims are left alone: a claim is a batch in
     * progress on some worker (deleting it hands the batch to a second worker), or one left by a
     * crash, which lapses within the lease by itself (claimBatch sweeps it).
     */
    async unlockTeam(teamId: string): Promise<number> {
      const { modifiedCount } = await col.updateMany({ teamId: oid(teamId), failed: true }, { $set: { lockTime: QUEUED_AT, retryCount: 0, stopped: false } });
      return modifiedCount;
    },
  };
}

export type TrainingRepo = ReturnType<typeof createTrainingRepo>;

/** The source's timestamp (queue order kept) followed by 8 bytes of a hash of source and key. */
function derivedId(source: ObjectId, key: string): ObjectId {
  const hash = createHash('sha256').update(source.toHexString()).update('\u0000').update(key).digest();
  return new ObjectId(Buffer.concat([source.id.subarray(0, 4), hash.subarray(0, 8)]));
}
