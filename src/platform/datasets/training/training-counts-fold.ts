/**
 * The pure part of the training queue's counts (training-counts.ts): what a dataset's base and
 * delta documents add up to, and when they need folding or recounting. No I/O.
 */
import { groupBy } from '../../../domain/group-by.js';

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

/** A dataset's folded counts (one per dataset). */
export interface CountBase {
  kind: 'base';
  teamId: string;
  datasetId: string;
  counts: CountEntry[];
  /** Ids of the deltas already in `counts` (deleted right after the fold; a crash may leave some). */
  folded: string[];
  /** The last change in `counts`, and the last recount from the queue. */
  changedAt: Date;
  checkedAt: Date;
}

/** One queue write's change to a dataset's counts. */
export interface CountDelta {
  kind: 'delta';
  id: string;
  teamId: string;
  datasetId: string;
  counts: CountEntry[];
  /** When it was written (the writer's clock, to the millisecond). */
  at: Date;
}

export type CountDoc = CountBase | CountDelta;

/** A change to one dataset's queue: queued items of a collection and model added (negative: removed). */
export interface QueueChange {
  teamId: string;
  datasetId: string;
  collectionId: string;
  model: string;
  delta: number;
}

/** Entries summed by collection and model (a space never occurs in a collection id). */
export class Tally {
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

/** One dataset's documents: its counts, the deltas not folded yet, the folded ones left behind, and when the queue last changed. */
export function summarise(docs: CountDoc[]) {
  const base = docs.find((doc): doc is CountBase => doc.kind === 'base');
  const folded = new Set(base?.folded);
  const deltas = docs.filter((doc): doc is CountDelta => doc.kind === 'delta');
  const live = deltas.filter((doc) => !folded.has(doc.id));
  const counts = new Tally().addAll(base?.counts ?? []);
  let changedAt = base?.changedAt.getTime() ?? 0;
  for (const delta of live) {
    counts.addAll(delta.counts);
    changedAt = Math.max(changedAt, delta.at.getTime());
  }
  return { base, live, counts, changedAt: new Date(changedAt), stale: deltas.filter((doc) => folded.has(doc.id)) };
}

/** The delta each dataset's changes make together (datasets whose changes cancel out make none). */
export function deltasOf(changes: QueueChange[]): { teamId: string; datasetId: string; counts: CountEntry[] }[] {
  return [...groupBy(changes, (change) => change.datasetId)]
    .map(([datasetId, group]) => {
      const tally = new Tally();
      for (const { collectionId, model, delta } of group) tally.add(collectionId, model, delta);
      return { datasetId, teamId: group[0]!.teamId, counts: tally.entries() };
    })
    .filter((delta) => delta.counts.length > 0);
}

/** The counts changed after their last recount (all of them, without a base yet). */
export function changedSinceCheck(base: CountBase | undefined, changedAt: Date): boolean {
  return changedAt.getTime() > (base?.checkedAt.getTime() ?? -1);
}

/** Changed since the last check and quiet since, or showing queued items and unchecked for an hour. */
export function needsRecount(base: CountBase, changedAt: Date, counts: Tally, now: number): boolean {
  if (changedSinceCheck(base, changedAt) && changedAt.getTime() < now - QUIET_MS) return true;
  return base.checkedAt.getTime() < now - RECHECK_MS && counts.entries().some((entry) => entry.n > 0);
}

/** Positive entries summed by `keyOf` (a collection, a model). */
export function positiveSums(tally: Tally, keyOf: (entry: CountEntry) => string): Map<string, number> {
  const sums = new Map<string, number>();
  for (const entry of tally.entries()) if (entry.n > 0) sums.set(keyOf(entry), (sums.get(keyOf(entry)) ?? 0) + entry.n);
  return sums;
}
