import { isDeepStrictEqual } from 'node:util';
import { type HeldLock, type LockHold, LockLostError } from '../../../infra/mongo-lock.js';
import type { DatasetsContext } from '../context.js';
import { removeWritesOfDeletedOwners } from '../training/deleted-datasets.js';
import type { IndexWriteIntent } from './index-write-lock.repo.js';

export type { IndexWriteIntent } from './index-write-lock.repo.js';

/**
 * An index write's work. `ctx` is the caller's context whose search index and data and vector
 * repositories check the lock before each call: name the parameter `ctx`, shadowing the caller's,
 * and write and log through it alone (test/unit/index-write-callbacks.test.ts refuses a call in
 * src/ whose callback does not). `intend` declares what it touches before it writes.
 */
export type IndexWriteRun<T> = (ctx: DatasetsContext, intend: (intent: IndexWriteIntent) => Promise<void>) => Promise<T>;

/**
 * Runs a write of a dataset's items or vectors as one index write: under the dataset's index
 * write lock (across processes), whose document first stores what the write touches (`intent`,
 * or what `run` declares through `intend` before it writes), `run` writes MongoDB and then logs
 * the change to the search index (dataset-index.ts); the lock goes once both are done.
 *
 * Why this is exact, with any number of processes killed at any moment:
 * - Writers of one dataset's items and vectors hold its lock from their write to their log, so
 *   the log describes their writes in the order MongoDB applied them: an update racing a delete
 *   cannot log its item after the delete's removal (resurrecting it), and an update matching no
 *   document logs nothing.
 * - A writer killed between its write and its log leaves the lock with its intent. Whoever takes
 *   the lock next (a writer of the dataset, or the sweep, once the lease lapsed) first repairs
 *   (`repair`, below): it logs what MongoDB then holds of those rows. A writer whose own log
 *   failed repairs at once, or leaves the lock to the next taker when the database fails it too.
 * - A writer that stalled past its lease (its lock taken over, or unrenewed for most of the lease)
 *   is the same as a dead one: it checks its lock before `run`, after each `intend`, and before
 *   each call `run` makes to the search index or the data and vector repositories (`run` gets
 *   them only through a checked context, `lockedContext` below), so it stops before its next
 *   write or log, never logging a change the new holder may have overwritten since. It then
 *   neither repairs nor releases but abandons the lock, whose taker repairs the stored intent.
 *   A check that passes trusts the lock a few seconds more (mongo-lock.ts): time for the command
 *   that follows it, not for a stall inside that command. A write held up that long (to MongoDB
 *   or the search index's log) may land after the taker's repair; so a writer stopped that way,
 *   once one of its calls had passed its check, takes the lock again with its intent stored
 *   (awaiting its own lapse if nobody took it over) and repairs that intent once more: by then
 *   what it sent has landed. Failing that (a 409, the database down), its caller still gets the
 *   LockLostError and the late write stays unlogged until the dataset's next repair of those rows.
 * Writes that only remove rows of collections already gone (deleted-datasets.ts) need no lock:
 * they log the removal before deleting, and writers into such a collection check it after.
 */
export async function withIndexWrite<T>(
  ctx: DatasetsContext,
  datasetId: string,
  intent: IndexWriteIntent | undefined,
  run: IndexWriteRun<T>,
): Promise<T> {
  const lock = await ctx.repos.indexWrites.acquire<IndexWriteIntent>(datasetId, { payload: intent, busy: `Another write to dataset ${datasetId} is in progress; try again` });
  return runLocked(ctx, datasetId, lock, intent, run);
}

/**
 * Repairs what holders taken for dead at `now` left (their lock unrenewed for a lease), for
 * datasets nobody writes to afterwards: run every minute. Returns how many were repaired.
 */
export async function repairAbandonedIndexWrites(ctx: DatasetsContext, now = new Date()): Promise<number> {
  let repaired = 0;
  for (const datasetId of await ctx.repos.indexWrites.lapsed(now)) {
    // Taken by a live writer meanwhile: that writer repairs.
    const lock = await ctx.repos.indexWrites.tryAcquire<IndexWriteIntent>(datasetId, { now });
    if (!lock) continue;
    if (lock.left) repaired += 1;
    await runLocked(ctx, datasetId, lock, undefined, async () => undefined);
  }
  return repaired;
}

/** Repairs what a dead holder left, runs the write, and releases the lock (or leaves it, with its intent, to the next taker). */
async function runLocked<T>(
  ctx: DatasetsContext,
  datasetId: string,
  lock: HeldLock<IndexWriteIntent>,
  intent: IndexWriteIntent | undefined,
  write: IndexWriteRun<T>,
  afterLoss = false,
): Promise<T> {
  // Whether a call made under the lock passed its check since the lock last proved ours: it may land late.
  let sent = false;
  const locked = lockedContext(ctx, lock, () => {
    sent = true;
  });
  let current = intent;
  // The dead holder's intent stays stored until repaired: a failure before leaves it to the next taker.
  let repaired = lock.left === null;
  try {
    if (lock.left) {
      await repair(locked, datasetId, lock.left);
      await lock.carry(intent ?? null);
      lock.assertHeld();
      repaired = true;
      sent = false;
    }
    lock.assertHeld();
    const result = await write(locked, async (next) => {
      current = next;
      await lock.carry(next);
      // A carry that matched nothing found the lock taken over: its new holder never got `next`.
      lock.assertHeld();
    });
    await lock.release();
    return result;
  } catch (error) {
    // Released once what the write did is repaired; otherwise left to lapse with its intent stored.
    // A holder that lost the lock does neither: repairing without it races the new holder's
    // writes, and a release would delete the intent the new holder may not have taken yet.
    try {
      if (!repaired) throw error;
      lock.assertHeld();
      if (current) await repair(locked, datasetId, current);
      await lock.release();
    } catch {
      lock.abandon();
      // What a call sent before the loss landed before the loss surfaced, perhaps after the new
      // holder's repair: repaired again under the lock taken anew (once; the caller's error stands).
      const touched = repaired ? current : lock.left;
      if (error instanceof LockLostError && sent && touched && !afterLoss) await repairAfterLoss(ctx, datasetId, touched).catch(() => undefined);
    }
    throw error;
  }
}

/** Takes the dataset's lock with `intent` stored (left to the next taker if this fails) and repairs it. */
async function repairAfterLoss(ctx: DatasetsContext, datasetId: string, intent: IndexWriteIntent): Promise<void> {
  const lock = await ctx.repos.indexWrites.acquire<IndexWriteIntent>(datasetId, { payload: intent });
  // Taking over its own lapsed lock, the writer gets its intent as `left`, which runLocked repairs.
  await runLocked(ctx, datasetId, lock, intent, async (locked) => (isDeepStrictEqual(lock.left, intent) ? undefined : repair(locked, datasetId, intent)), true);
}

/**
 * `ctx` for the holder of `lock`: each call to its search index or its data and vector
 * repositories checks the lock first (reads too: what a holder reads under the lock it writes after).
 */
function lockedContext(ctx: DatasetsContext, lock: LockHold, passed: () => void): DatasetsContext {
  const { data, vectors } = ctx.repos;
  const check = <T extends object>(target: T) => checked(target, lock, passed);
  return { ...ctx, searchIndex: check(ctx.searchIndex), repos: { ...ctx.repos, data: check(data), vectors: check(vectors) } };
}

/** `target` (a plain object of functions, as the repositories are) with each function checking the lock before it runs (`passed` once it did). */
function checked<T extends object>(target: T, lock: LockHold, passed: () => void): T {
  const check = (value: unknown) =>
    typeof value === 'function'
      ? (...args: unknown[]) => {
          lock.assertHeld();
          passed();
          return value.apply(target, args);
        }
      : value;
  return Object.fromEntries(Object.entries(target).map(([name, value]) => [name, check(value)])) as T;
}

/**
 * Makes the dataset's search index say what MongoDB holds of an intent's rows, under the
 * dataset's lock, finishing what the dead writer had started where its intent is plain:
 * - a delete of collections' content is finished;
 * - items found are put, items missing removed;
 * - vectors an item points to are put; the others are removed, from MongoDB too (every writer
 *   stores vectors and points its item to them under the lock, so outside it a vector no item
 *   points to is one a write left behind: the old ones of an update or delete, the new ones of
 *   an insert that never stored its item);
 * - items of a collection or dataset deleted meanwhile go (the check their writer makes after
 *   writing, which it may not have lived to make).
 */
async function repair(ctx: DatasetsContext, datasetId: string, intent: IndexWriteIntent): Promise<void> {
  const { data, vectors, datasets } = ctx.repos;
  const { teamId } = intent;
  // A deleted dataset has no index left; its purge removes the rows.
  if (!(await datasets.existingIds([datasetId])).has(datasetId)) return;
  const collections = intent.collections ?? [];
  if (collections.length > 0) {
    await vectors.deleteByCollections(teamId, collections);
    await data.deleteByCollections(teamId, collections);
    await ctx.searchIndex.removeCollections(collections.map((_id) => ({ _id, datasetId })));
  }
  const itemIds = intent.items ?? [];
  const vectorIds = intent.vectors ?? [];
  const rows = (await vectors.findByIds(teamId, vectorIds)).filter((row) => row.datasetId === datasetId);
  const owners = await data.findForIndex(teamId, datasetId, [...new Set([...itemIds, ...rows.map((row) => row.dataId)])]);
  const items = owners.filter((owner) => itemIds.includes(owner._id));
  const missingItems = itemIds.filter((id) => !items.some((item) => item._id === id));
  await ctx.searchIndex.putItems(items);
  if (missingItems.length > 0) await ctx.searchIndex.removeItems(datasetId, missingItems);
  const pointed = new Set(owners.flatMap((owner) => owner.indexes.map((index) => index.dataId)));
  const live = rows.filter((row) => pointed.has(row.id));
  const dead = vectorIds.filter((id) => !live.some((row) => row.id === id));
  await ctx.searchIndex.addVectors(live);
  await vectors.deleteByIds(teamId, dead);
  if (dead.length > 0) await ctx.searchIndex.removeVectors(datasetId, dead);
  await removeWritesOfDeletedOwners(ctx, items.map((item) => ({ teamId, datasetId, collectionId: item.collectionId })));
}
