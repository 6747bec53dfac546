import { randomUUID } from 'node:crypto';
import { backoffDelay } from '../../../infra/backoff.js';
import { describeError } from '../../../infra/database-errors.js';
import { withLeaseRenewal } from '../../../infra/lease-renewal.js';
import type { DatasetsContext } from '../context.js';
import type { DataIndex } from '../data/data.repo.js';
import { buildIndexes } from '../data/data-indexes.js';
import { newVectorId, onCurrentModel, removeVectors, searchTokens, storeVectors } from '../data/data-writer.js';
import { groupBy } from '../../../domain/group-by.js';
import { textHead } from '../../../domain/text-cut.js';
import { withIndexWrite } from '../search/index-writes.js';
import { removeWritesOfDeletedOwners } from './deleted-datasets.js';
import { processQaItem } from './qa-training.js';
import { continueRebuildChain } from './rebuild.js';
import type { TrainingRecord } from './training.repo.js';
import { TRAINING_BATCH_CHARS } from './training-records.js';

export interface TrainingWorkerOptions {
  /** Items embedded per provider call. */
  batchSize?: number;
  /**
   * Characters of text (q, a, custom indexes) one claimed batch may hold beyond its first item:
   * 128 items of long indexes were tens of MB for one embedding call (a minute of the event loop
   * with the local model).
   */
  batchChars?: number;
  /**
   * A live worker renews its claims every third of this; a claim lapses two of these after its
   * last renewal (training.repo.ts), so a crashed worker's items come back that soon.
   */
  lockMs?: number;
  /** Failed attempts after which an item stays in the queue, locked, with its error. */
  maxRetries?: number;
  /** First retry delay of an item; doubles per failure, up to maxBackoffMs. */
  backoffMs?: number;
  /** Poll interval when the queue is empty. */
  idleMs?: number;
  /** Longest wait after failed iterations in a row (they back off from idleMs), and an item's longest retry delay. */
  maxBackoffMs?: number;
  /** Told of each failed iteration (metrics). */
  onIterationFailure?: (error: unknown) => void;
  /**
   * Counts still showing items when the queue runs dry are recounted once they have not changed
   * for this long (a removal on another worker racing the recount would be missed).
   */
  countsSettleMs?: number;
}

interface Planned {
  item: TrainingRecord;
  /** The data item written: the training item's own id for inserts (so a retry rewrites the same one). */
  dataId: string;
  indexes: DataIndex[];
  /** Vector ids replaced by a rebuild. */
  oldVectorIds: string[];
  /** The rebuilt item's version when planned: its indexes are set only while it still has it. */
  version?: number;
}

/** A planned item with the vectors embedded for its indexes, by `model`. */
type Embedded = { entry: Planned; vectors: number[][]; model: string };

/**
 * The training queue worker: claims items atomically (one insert of claim documents keyed by the
 * item ids), embeds them in batches, writes vectors then data (both idempotent by id), and
 * deletes the item last, so a crash at any point only means the item is processed again, never
 * lost or doubled. QA items are idempotent too (qa-training.ts).
 */
export function createTrainingWorker(ctx: DatasetsContext, options: TrainingWorkerOptions = {}) {
  const batchSize = options.batchSize ?? 128;
  const batchChars = options.batchChars ?? TRAINING_BATCH_CHARS;
  const lockMs = options.lockMs ?? 15_000;
  /** Names this worker's claims (renewals touch only its own). */
  const owner = randomUUID();
  const maxRetries = options.maxRetries ?? 5;
  const backoffMs = options.backoffMs ?? 2_000;
  const idleMs = options.idleMs ?? 2_000;
  const maxBackoffMs = options.maxBackoffMs ?? 60_000;
  const countsSettleMs = options.countsSettleMs ?? 5_000;
  const { trainings, collections, data } = ctx.repos;
  let running = false;
  let loop: Promise<void> | undefined;
  let wake: (() => void) | undefined;
  // Aborted by stop(): provider calls in flight end at once (a QA call may take minutes), so a
  // shutdown is not held up; their items are handed back unharmed, not counted as failed.
  let halt = new AbortController();

  async function fail(item: TrainingRecord, error: unknown, now: Date) {
    if (halt.signal.aborted) {
      await trainings.release([item._id]);
      return;
    }
    const attempts = item.retryCount + 1;
    const message = textHead(error instanceof Error ? error.message : String(error), 500);
    const givingUp = attempts >= maxRetries;
    // A rebuild item that gives up stays queued with its error; its chain goes on without it.
    if (givingUp) await continueRebuildChain(ctx, item);
    // One lock window before the retry time: claimable once the backoff has passed. Capped like
    // the loop's own backoff, so that no retry time nears PERMANENT_LOCK whatever maxRetries is.
    const retryAt = now.getTime() + backoffDelay(attempts, { firstMs: backoffMs, maxMs: maxBackoffMs });
    await trainings.recordFailure(item._id, message, givingUp ? { givingUp } : { givingUp, lockTime: new Date(retryAt - lockMs) });
    ctx.log.warn({ trainingId: item._id, attempts, error: message }, 'training item failed');
  }

  async function plan(item: TrainingRecord, collectionExists: (teamId: string, id: string) => Promise<boolean>): Promise<Planned | null> {
    if (!(await collectionExists(item.teamId, item.collectionId))) return null;
    if (item.dataId) {
      const existing = await data.findById(item.teamId, item.dataId);
      if (!existing) return null;
      // Fresh vector ids (not derived from the queue item): the vectors of a try that lost to an
      // update are removed, and must not be ones a try before it left the item pointing to.
      const indexes = existing.indexes.map((index) => ({ ...index, dataId: newVectorId() }));
      return { item, dataId: existing._id, indexes, oldVectorIds: existing.indexes.map((index) => index.dataId), version: existing.version };
    }
    const indexes = buildIndexes(item.q, item.a, item.indexes).map((index, i) => ({ ...index, dataId: `${item._id}-${i}` }));
    return { item, dataId: item._id, indexes, oldVectorIds: [] };
  }

  const vectorRows = ({ entry, vectors, model }: Embedded) =>
    entry.indexes.map((index, i) => ({
      id: index.dataId,
      teamId: entry.item.teamId,
      datasetId: entry.item.datasetId,
      collectionId: entry.item.collectionId,
      dataId: entry.dataId,
      model,
      vector: vectors[i] ?? [],
    }));
  const textsOf = (group: Embedded[]) => group.flatMap(({ entry }) => entry.indexes.map((index) => index.text));

  /**
   * New items of a batch, one index write per dataset (a batch may span datasets and teams): its
   * vectors, then its data items; then the queue items go.
   */
  async function finishInserts(entries: Embedded[]) {
    if (entries.length === 0) return;
    for (const group of groupBy(entries, ({ entry }) => entry.item.datasetId).values()) {
      const fresh = group.flatMap(vectorRows);
      const items = group.map(({ entry: { item, dataId, indexes } }) => ({
        _id: dataId,
        teamId: item.teamId,
        tmbId: item.tmbId,
        datasetId: item.datasetId,
        collectionId: item.collectionId,
        q: item.q,
        a: item.a,
        chunkIndex: item.chunkIndex,
        indexes,
        fullTextTokens: searchTokens(item.q, item.a),
      }));
      const { teamId, datasetId } = group[0]!.entry.item;
      await withIndexWrite(ctx, datasetId, { teamId, items: items.map((item) => item._id), vectors: fresh.map((row) => row.id) }, async (ctx) => {
        // The queue item's model may be one the dataset left since (a push that read it before a switch).
        const { rows } = await onCurrentModel(ctx, { teamId, datasetId }, fresh, textsOf(group), halt.signal);
        await storeVectors(ctx, rows);
        await ctx.repos.data.insertNew(items);
        await ctx.searchIndex.putItems(items);
      });
    }
    await trainings.deleteItems(entries.map(({ entry }) => entry.item));
  }

  /**
   * Rebuild items of a batch, one index write per dataset: new vectors, the items re-pointed, old
   * vectors removed; then each queues the next waiting item before it disappears (the chain). An
   * item changed since it was planned (an update raced the embedding) keeps what the update wrote:
   * its new vectors go, and its queue item is released to be planned again from the item as stored.
   */
  async function finishRebuilds(entries: Embedded[]) {
    if (entries.length === 0) return;
    const lost = new Set<Embedded>();
    for (const group of groupBy(entries, ({ entry }) => entry.item.datasetId).values()) {
      const fresh = group.flatMap(vectorRows);
      const old = group.flatMap(({ entry }) => entry.oldVectorIds);
      const { teamId, datasetId } = group[0]!.entry.item;
      await withIndexWrite(ctx, datasetId, { teamId, vectors: [...fresh.map((row) => row.id), ...old] }, async (ctx) => {
        const { rows } = await onCurrentModel(ctx, { teamId, datasetId }, fresh, textsOf(group), halt.signal);
        await storeVectors(ctx, rows);
        const unused: string[] = [];
        for (const embedded of group) {
          const { entry } = embedded;
          const ref = { _id: entry.dataId, collectionId: entry.item.collectionId, version: entry.version };
          if (await ctx.repos.data.setIndexes(teamId, ref, entry.indexes)) unused.push(...entry.oldVectorIds);
          else {
            lost.add(embedded);
            unused.push(...entry.indexes.map((index) => index.dataId));
          }
        }
        await removeVectors(ctx, teamId, datasetId, unused);
      });
    }
    const done = entries.filter((embedded) => !lost.has(embedded));
    for (const { entry } of done) await continueRebuildChain(ctx, entry.item);
    await trainings.deleteItems(done.map(({ entry }) => entry.item));
    await trainings.release([...lost].map(({ entry }) => entry.item._id));
  }

  async function processVectorBatch(batch: TrainingRecord[], now: Date) {
    const known = new Map<string, boolean>();
    const collectionExists = async (teamId: string, id: string) => {
      if (!known.has(id)) known.set(id, await collections.exists(teamId, id));
      return known.get(id)!;
    };
    const planned: Planned[] = [];
    for (const item of batch) {
      const entry = await plan(item, collectionExists);
      // The collection or data item is gone (deleted meanwhile): the item has nothing left to do
      // but, for a rebuild, hand its chain on first.
      if (!entry) {
        await continueRebuildChain(ctx, item);
        await trainings.deleteItems([item]);
      } else planned.push(entry);
    }
    await embedAndWrite(planned, now);
    // A dataset or collection deleted while the batch was written: remove what landed after its cascade.
    await removeWritesOfDeletedOwners(ctx, planned.map((entry) => entry.item));
  }

  async function embedAndWrite(planned: Planned[], now: Date) {
    const texts = planned.flatMap((entry) => entry.indexes.map((index) => index.text));
    if (texts.length === 0) return;
    let vectors: number[][];
    // A batch shares its items' model (claimBatch); each write checks it is still its dataset's.
    const model = planned[0]!.item.model;
    try {
      const embedded = await ctx.embedders().forModel(model).embed(texts, 'db', halt.signal);
      if (embedded.vectors.length !== texts.length) throw new Error(`Embedding provider returned ${embedded.vectors.length} vectors for ${texts.length} texts`);
      vectors = embedded.vectors;
    } catch (error) {
      for (const entry of planned) await fail(entry.item, error, now);
      return;
    }
    let offset = 0;
    const inserts: Embedded[] = [];
    const rebuilds: Embedded[] = [];
    for (const entry of planned) {
      const own = vectors.slice(offset, offset + entry.indexes.length);
      offset += entry.indexes.length;
      (entry.item.dataId ? rebuilds : inserts).push({ entry, vectors: own, model });
    }
    // Writes are idempotent by id: a retry rewrites whatever part already landed.
    const finishing = async (finish: (entries: Embedded[]) => Promise<void>, entries: Embedded[]) => {
      try {
        await finish(entries);
      } catch (error) {
        for (const { entry } of entries) await fail(entry.item, error, now);
      }
    };
    await finishing(finishRebuilds, rebuilds);
    await finishing(finishInserts, inserts);
  }

  /**
   * Whether the queue's counts are to be checked the next time nothing is claimable: after work,
   * and at start (a crash before it may have left a queue write without its count).
   */
  let recheckCounts = true;
  async function recheckCountsOnceIdle() {
    try {
      recheckCounts = (await trainings.recheckCountsAfterDrain(countsSettleMs)) > 0;
    } catch (error) {
      ctx.log.warn(`training worker: checking the queue's counts failed: ${describeError(error)}`);
    }
  }

  /** Claims and processes one batch; returns how many items were claimed (0 = nothing to do). */
  async function runOnce(now = new Date()): Promise<number> {
    const batch = await trainings.claimBatch(now, lockMs, batchSize, owner, batchChars);
    const first = batch[0];
    if (!first) {
      if (recheckCounts) await recheckCountsOnceIdle();
      return 0;
    }
    recheckCounts = true;
    // Renewed on the claim's own clock (tests pass a later `now`).
    const started = Date.now();
    const renew = () =>
      trainings.renewClaims(batch.map((item) => item._id), owner, new Date(now.getTime() + Date.now() - started)).catch((error: unknown) => {
        ctx.log.warn(`training worker: renewing claims failed: ${describeError(error)}`);
      });
    return withLeaseRenewal(lockMs / 3, renew, async () => {
      if (first.mode !== 'qa') {
        await processVectorBatch(batch, now);
        return batch.length;
      }
      try {
        await processQaItem(ctx, first, halt.signal);
      } catch (error) {
        await fail(first, error, now);
      }
      return 1;
    });
  }

  /** Runs until nothing is claimable at `now` (tests pass a later `now` to skip backoff waits). */
  async function drain(now?: Date, maxItems = Number.POSITIVE_INFINITY): Promise<number> {
    let total = 0;
    while (total < maxItems) {
      const claimed = await runOnce(now ?? new Date());
      if (claimed === 0) break;
      total += claimed;
    }
    return total;
  }

  /** Waits `ms`, or less when woken (new work queued, or stop). */
  async function pause(ms: number) {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    wake = undefined;
  }

  function start() {
    if (running) return;
    running = true;
    ctx.onWake(() => wake?.());
    loop = (async () => {
      // Failures in a row (a database outage, typically): back off, one readable line each.
      let failures = 0;
      while (running) {
        let claimed = 0;
        try {
          claimed = await runOnce();
          if (failures > 0) ctx.log.info(`training worker: resumed after ${failures} failed iteration(s)`);
          failures = 0;
        } catch (error) {
          failures += 1;
          options.onIterationFailure?.(error);
          const delay = backoffDelay(failures, { firstMs: idleMs, maxMs: maxBackoffMs });
          ctx.log.warn(`training worker: iteration failed (${failures} in a row, next try in ${Math.round(delay / 1000)} s): ${describeError(error)}`);
          if (running) await pause(delay);
          continue;
        }
        if (claimed === 0 && running) await pause(idleMs);
      }
    })();
  }

  async function stop() {
    running = false;
    halt.abort(new Error('the training worker is stopping'));
    wake?.();
    await loop;
    // Later calls (a drain, a restart) run with calls of their own.
    halt = new AbortController();
  }

  return { runOnce, drain, start, stop, get running() {
    return running;
  } };
}

export type TrainingWorker = ReturnType<typeof createTrainingWorker>;
