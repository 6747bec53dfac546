import { randomUUID } from 'node:crypto';
import { describeError } from '../../../infra/database-errors.js';
import type { DatasetEntry } from './dataset-entry.js';
import { captureSnapshot, encodeSnapshot } from './index-codec.js';
import type { IndexMeta, IndexStore } from './index-store.repo.js';

export interface CompactionOptions {
  /** A new snapshot is written once this many rows changed (and `ratio` of the dataset's items)... */
  minRows?: number;
  ratio?: number;
  /** ...or once this many changes were logged since the last one. */
  maxChanges?: number;
  now: () => number;
}

/** Folded changes keep their number this long (far above any append's wait), so none is reused. */
export const FOLDED_KEEP_MS = 60 * 60_000;
/** How long a process may take to write a snapshot before another may start one. */
const CLAIM_MS = 5 * 60_000;
/**
 * Parts of an unpublished snapshot whose writer claimed this long ago are a crashed writer's: its
 * claim lapsed a claim's length before (slack for clocks that disagree), so it publishes nothing.
 */
export const ABANDONED_MS = 2 * CLAIM_MS;

/**
 * Writes a dataset's next snapshot from the entry a process holds, in the background, once
 * enough changed since the last one: one writer per dataset across processes (a claim in the
 * meta document), published only if nobody published meanwhile; the changes it holds then
 * lose their content and the replaced snapshot goes.
 */
export function createCompactor(
  deps: { store: IndexStore; log: { warn(message: string): void } },
  options: CompactionOptions,
  isCurrent: (entry: DatasetEntry) => boolean,
) {
  const minRows = options.minRows ?? 2000;
  const ratio = options.ratio ?? 0.25;
  const maxChanges = options.maxChanges ?? 200;
  const { now } = options;
  const compactions = new Map<string, Promise<void>>();
  let closed = false;

  function maybeCompact(entry: DatasetEntry) {
    const { datasetId } = entry;
    if (closed || compactions.has(datasetId) || !isCurrent(entry)) return;
    const changed = entry.seq - entry.snapshotSeq;
    const due = entry.snapshotSeq < 0 || (changed > 0 && (entry.rowsSinceSnapshot >= Math.max(minRows, entry.items.size * ratio) || changed >= maxChanges));
    if (!due) return;
    const run = compact(entry)
      .catch((error) => deps.log.warn(`writing the search index snapshot of dataset ${datasetId} failed: ${describeError(error)}`))
      .finally(() => compactions.delete(datasetId));
    compactions.set(datasetId, run);
  }

  /** Writes the entry as the dataset's next snapshot, unless another process is writing one. */
  async function compact(entry: DatasetEntry): Promise<void> {
    const { datasetId } = entry;
    const claimedAt = now();
    const until = claimedAt + CLAIM_MS;
    const previous = await deps.store.claim(datasetId, entry.model, new Date(claimedAt), new Date(until));
    if (!previous) return;
    if (previous.snapshot !== null && previous.seq >= entry.seq && !(await republish(entry, previous.snapshot, previous))) {
      // The stored snapshot holds everything this entry knows: nothing to add.
      entry.snapshotSeq = Math.min(previous.seq, entry.seq);
      entry.rowsSinceSnapshot = 0;
      await deps.store.release(datasetId);
      return;
    }
    const state = captureSnapshot(entry);
    const rowsAtCapture = entry.rowsSinceSnapshot;
    const snapshot = randomUUID();
    let published = false;
    try {
      const parts = await encodeSnapshot(state);
      await deps.store.writeParts(datasetId, snapshot, parts, new Date(claimedAt));
      // Past its claim, parts this old may be swept as abandoned by another writer: not published.
      if (now() < until) published = await deps.store.publish(datasetId, previous, { snapshot, seq: state.seq, model: state.model, parts: parts.length }, new Date(now()));
    } finally {
      if (!published) {
        await deps.store.release(datasetId).catch(() => undefined);
        await deps.store.deleteSnapshot(snapshot).catch(() => undefined);
      }
    }
    if (!published) return;
    entry.snapshotSeq = state.seq;
    entry.rowsSinceSnapshot -= rowsAtCapture;
    // Only the snapshot this publish replaced: another process may already be writing the next one.
    if (previous.snapshot !== null) await deps.store.deleteSnapshot(previous.snapshot);
    await deps.store.foldChanges(datasetId, state.seq, new Date(now() - FOLDED_KEEP_MS));
    const current = await deps.store.meta(datasetId);
    const keep = [snapshot, ...(current?.snapshot ? [current.snapshot] : [])];
    await deps.store.deleteAbandonedSnapshots(datasetId, keep, new Date(now() - ABANDONED_MS));
  }

  /**
   * True for an entry rebuilt from the data items (never snapshotted) at exactly the stored
   * snapshot's change when that snapshot lacks parts (the open fell back for that): it is
   * rewritten, so the next open needs no rebuild.
   */
  async function republish(entry: DatasetEntry, snapshot: string, previous: IndexMeta): Promise<boolean> {
    if (entry.snapshotSeq >= 0 || previous.seq !== entry.seq) return false;
    return (await deps.store.partCount(snapshot)) !== previous.parts;
  }

  return {
    maybeCompact,
    /** Resolves once a snapshot write of the dataset in progress is over. */
    finished: async (datasetId: string) => void (await compactions.get(datasetId)),
    /** Stops starting snapshot writes and waits for those in progress (before the database closes). */
    async close(): Promise<void> {
      closed = true;
      await Promise.allSettled([...compactions.values()]);
    },
  };
}
