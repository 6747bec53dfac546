import { randomUUID } from 'node:crypto';
import { Errors } from '../../../infra/errors.js';
import type { DatasetsContext } from '../context.js';
import { removeWritesOfDeletedOwners } from '../training/deleted-datasets.js';
import type { IndexWriteIntent } from './index-write-lock.repo.js';

/** A holder renews its lock every third of this; a lock unrenewed this long is taken for dead. */
const LEASE_MS = 15_000;
/** How long a writer waits for the dataset's lock before answering 409. */
const WAIT_MS = 30_000;

export type { IndexWriteIntent } from './index-write-lock.repo.js';

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
 * Writes that only remove rows of collections already gone (deleted-datasets.ts) need no lock:
 * they log the removal before deleting, and writers into such a collection check it after.
 */
export async function withIndexWrite<T>(
  ctx: DatasetsContext,
  datasetId: string,
  intent: IndexWriteIntent | undefined,
  run: (intend: (intent: IndexWriteIntent) => Promise<void>) => Promise<T>,
): Promise<T> {
  const lock = await takeLock(ctx, datasetId, intent, true, new Date());
  return runLocked(ctx, datasetId, lock!, intent, run);
}

/**
 * Repairs what holders taken for dead at `now` left (their lock unrenewed for a lease), for
 * datasets nobody writes to afterwards: run every minute. Returns how many were repaired.
 */
export async function repairAbandonedIndexWrites(ctx: DatasetsContext, now = new Date()): Promise<number> {
  let repaired = 0;
  for (const datasetId of await ctx.repos.indexWrites.abandoned(now)) {
    // Taken by a live writer meanwhile: that writer repairs.
    const lock = await takeLock(ctx, datasetId, undefined, false, now);
    if (!lock) continue;
    if (lock.left) repaired += 1;
    await runLocked(ctx, datasetId, lock, undefined, async () => undefined);
  }
  return repaired;
}

interface Lock {
  holder: string;
  /** The intent a dead holder left, to repair first. */
  left: IndexWriteIntent | null;
  leaseEnd: () => Date;
}

/** Takes the dataset's lock, waiting for it (up to WAIT_MS, then 409) or not (null). */
async function takeLock(ctx: DatasetsContext, datasetId: string, intent: IndexWriteIntent | undefined, wait: boolean, now: Date): Promise<Lock | null> {
  const holder = randomUUID();
  const started = Date.now();
  // On the caller's clock (the sweep's tests move it), advancing with real time.
  const clock = () => new Date(now.getTime() + Date.now() - started);
  const leaseEnd = () => new Date(clock().getTime() + LEASE_MS);
  for (let attempt = 0; ; attempt++) {
    const taken = await ctx.repos.indexWrites.take(datasetId, holder, intent, clock(), leaseEnd());
    if (taken) return { holder, left: taken.left, leaseEnd };
    if (!wait) return null;
    if (Date.now() - started > WAIT_MS) throw Errors.conflict(`Another write to dataset ${datasetId} is in progress; try again`);
    // Short waits first (most writes take milliseconds), then at most 5 tries a second.
    await new Promise((resolve) => setTimeout(resolve, Math.min(200, 10 * 1.5 ** attempt) * (1 + Math.random())));
  }
}

/** Repairs what a dead holder left, runs the write with the lock renewed, and releases it. */
async function runLocked<T>(
  ctx: DatasetsContext,
  datasetId: string,
  { holder, left, leaseEnd }: Lock,
  intent: IndexWriteIntent | undefined,
  write: (intend: (intent: IndexWriteIntent) => Promise<void>) => Promise<T>,
): Promise<T> {
  const locks = ctx.repos.indexWrites;
  const renew = setInterval(() => void locks.renew(datasetId, holder, leaseEnd()).catch(() => undefined), LEASE_MS / 3);
  renew.unref();
  let current = intent;
  // The dead holder's intent stays stored until repaired: a failure before leaves it to the next taker.
  let repaired = left === null;
  try {
    if (left) {
      await repair(ctx, datasetId, left);
      await locks.intend(datasetId, holder, intent ?? null);
      repaired = true;
    }
    const result = await write(async (next) => {
      current = next;
      await locks.intend(datasetId, holder, next);
    });
    await locks.release(datasetId, holder);
    return result;
  } catch (error) {
    if (repaired) {
      const mended = current ? repair(ctx, datasetId, current) : Promise.resolve();
      await mended.then(() => locks.release(datasetId, holder)).catch(() => undefined);
    }
    throw error;
  } finally {
    clearInterval(renew);
  }
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
