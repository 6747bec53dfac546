import type { Db } from 'mongodb';
import { groupBy } from '../../../domain/group-by.js';
import { createMongoLocks } from '../../../infra/mongo-lock.js';
import { changedSinceCheck, type CountDoc, type CountEntry, deltasOf, needsRecount, positiveSums, type QueueChange, summarise, Tally } from './training-counts-fold.js';
import { createTrainingCountsRepo, TRAINING_COUNTS_COLLECTION } from './training-counts.repo.js';

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
 *
 * The documents are read and written by training-counts.repo.ts; what they add up to, and when
 * they need folding or recounting, is training-counts-fold.ts.
 */
/** Unfolded deltas that make a fold worth its few commands. */
const FOLD_AT = 32;

export interface TrainingCountsOptions {
  /** The real counts of one dataset's queue by collection and model (a scan of it on FerretDB). */
  recount: (teamId: string, datasetId: string) => Promise<CountEntry[]>;
  /** Hears a failed fold or recount behind an answer (the answer itself stays right). */
  onError?: (error: unknown) => void;
  now?: () => Date;
  /** How long a fold or first count waits for the dataset's lock (default the locks' own wait). */
  lockWaitMs?: number;
}

export function createTrainingCounts(db: Db, options: TrainingCountsOptions) {
  const repo = createTrainingCountsRepo(db);
  const locks = createMongoLocks(db, { waitMs: options.lockWaitMs });
  const now = options.now ?? (() => new Date());
  /** Deltas this process wrote per dataset since it last folded them. */
  const written = new Map<string, number>();
  /** Upkeep running per dataset in this process (one at a time). */
  const upkeep = new Map<string, Promise<void>>();

  /**
   * Writes the base from the deltas (or from a recount of the queue), then deletes the deltas it
   * now holds. A recount takes the deltas seen before it as included: a write landing during the
   * scan may be counted twice, and the next quiet recount mends that. A holder that lost the lock
   * (stalled past its lease, say in a long scan) writes nothing more: its base, older than the new
   * holder's, would replace it. Its LockLostError goes to onError, as any failed upkeep.
   */
  function rewriteBase(teamId: string, datasetId: string, recount: boolean): Promise<void> {
    return locks.withLock(`${TRAINING_COUNTS_COLLECTION}:${datasetId}`, async (lock) => {
      // A recount is a check as of its start: a delta written during the scan is later than
      // that, so the next quiet read counts again (the scan may or may not have seen its items).
      const started = now();
      const seen = summarise(await repo.ofDataset(teamId, datasetId));
      // Without a base the deltas may miss items queued before counting began: count them all.
      if (!seen.base) recount = true;
      const counts = recount ? await options.recount(teamId, datasetId) : seen.counts.entries();
      const base = {
        teamId,
        datasetId,
        counts: counts.filter((entry) => entry.n !== 0),
        folded: seen.live.map((doc) => doc.id),
        changedAt: seen.changedAt,
        checkedAt: recount ? started : (seen.base?.checkedAt ?? new Date(0)),
      };
      lock.assertHeld();
      await repo.writeBase(base);
      const done = [...base.folded, ...seen.stale.map((doc) => doc.id)];
      lock.assertHeld();
      await repo.deleteDeltas(teamId, datasetId, done);
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
    const deltas = deltasOf(changes);
    if (deltas.length === 0) return;
    await repo.insertDeltas(deltas.map((delta) => ({ ...delta, at: now() })));
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
    return summarise(await repo.ofDataset(teamId, datasetId));
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
      const summary = await summaryWithBase(teamId, datasetId, await repo.ofDataset(teamId, datasetId));
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
      const byDataset = groupBy(await repo.all(), (doc) => doc.datasetId);
      const all = new Tally();
      for (const [datasetId, own] of byDataset) {
        const summary = await summaryWithBase(own[0]!.teamId, datasetId, own);
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
      const docs = await repo.all();
      const settledBefore = now().getTime() - settleMs;
      let waiting = 0;
      for (const [datasetId, own] of groupBy(docs, (doc) => doc.datasetId)) {
        const { base, counts, changedAt } = summarise(own);
        if (counts.entries().length === 0 || !changedSinceCheck(base, changedAt)) continue;
        if (changedAt.getTime() > settledBefore) waiting += 1;
        else scheduleUpkeep(own[0]!.teamId, datasetId, true);
      }
      return waiting;
    },

    /**
     * Teams whose counts show queued items (a hint for sharing the worker between teams, not a
     * truth: items queued before counting began show nowhere, and items that gave up still count).
     * One read of the count documents; nothing is recounted.
     */
    async queuedTeams(): Promise<string[]> {
      const teams = new Set<string>();
      for (const own of groupBy(await repo.all(), (doc) => doc.datasetId).values()) {
        const teamId = own[0]!.teamId;
        if (!teams.has(teamId) && summarise(own).counts.entries().some((entry) => entry.n > 0)) teams.add(teamId);
      }
      return [...teams].sort();
    },

    /** Forgets deleted datasets' counts (their queue items went with them). */
    async dropDatasets(teamId: string, datasetIds: string[]): Promise<void> {
      await repo.dropDatasets(teamId, datasetIds);
      for (const datasetId of datasetIds) written.delete(datasetId);
    },

    /** Resolves once the upkeep started so far has ended (tests, shutdown). */
    async settled(): Promise<void> {
      while (upkeep.size > 0) await Promise.all(upkeep.values());
    },
  };
}

export type TrainingCounts = ReturnType<typeof createTrainingCounts>;
