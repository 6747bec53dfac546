import { groupBy } from '../../../domain/group-by.js';
import { Errors } from '../../../infra/errors.js';
import type { VersionStamps } from '../../../infra/version-stamps.js';
import type { CollectionRepo } from '../collections/collection.repo.js';
import type { DataRepo } from '../data/data.repo.js';
import type { DatasetRepo } from '../datasets/dataset.repo.js';
import { createCollectionLists } from './collection-lists.js';
import { type CollectionInfo, type DatasetEntry, fullTextSearchIn, type Hit, type IndexChange, type IndexedItem, type PreparedDataset, vectorSearchIn } from './dataset-entry.js';
import { decodeChange, encodeChange } from './index-codec.js';
import { type CompactionOptions, createCompactor, FOLDED_KEEP_MS } from './index-compaction.js';
import { openFromSnapshot, openFromSources } from './index-open.js';
import type { IndexStore } from './index-store.repo.js';
import type { VectorRepo, VectorRow } from './vector.repo.js';

export type DatasetIndexOptions = Partial<CompactionOptions> & {
  /** The bound on the estimated memory of the open indexes (DatasetEntry.estimatedBytes); default 1 GiB. */
  maxBytes?: number;
};

/** SEARCH_INDEX_MAX_BYTES's default. */
export const DEFAULT_SEARCH_INDEX_MAX_BYTES = 1024 ** 3;

export interface DatasetIndexDeps {
  data: DataRepo;
  vectors: VectorRepo;
  collections: Pick<CollectionRepo, 'byDatasets'>;
  /** Which datasets still exist (the sweep freeing the indexes of deleted ones). */
  datasets: Pick<DatasetRepo, 'existingIds'>;
  store: IndexStore;
  /** Read with a lease (~1 s): a search checks the database at most that often. */
  stamps: VersionStamps;
  /** Bumped without a lease wait: a write answers once its bump is stored, not a lease later. */
  bumps: VersionStamps;
  log: { info(message: string): void; warn(message: string): void };
}

/** Key of the version stamp every index-changing write bumps. */
export const searchStampKey = (datasetId: string) => `dataset:${datasetId}:search`;
/** A head of the change log learned from the database is trusted this long for numbering appends. */
const HEAD_TRUST_MS = 10 * 60_000;
const APPEND_ATTEMPTS = 20;
/**
 * A dataset's index replays the log at least this often when searched, stamp moved or not (a
 * writer killed between its log append and its bump moves no stamp). Its collections have their
 * own checks (collection-lists.ts).
 */
export const CATCH_UP_MAX_AGE_MS = 60_000;
/**
 * Changes are deleted from the log only once a snapshot holds them and FOLDED_KEEP_MS after they
 * were logged: an entry that read the log to its end less than half that ago finds every change
 * logged since (half the hour is left for clocks that disagree). A replay finding nothing then
 * means nothing was logged, without reading the meta to learn whether changes were deleted.
 */
const LOG_COMPLETE_WITHIN_MS = FOLDED_KEEP_MS / 2;

/**
 * The search indexes of this process, one per dataset, kept consistent with every process of
 * the deployment through MongoDB:
 * - every index-changing write appends a numbered change to the dataset's log (after the data
 *   write it describes, inside the same index write: index-writes.ts, which makes the log match
 *   MongoDB whatever process dies when), applies it here at once and bumps the dataset's stamp;
 * - a search reads the stamp (leased ~1 s) and, when it moved or a minute passed, replays the log
 *   from where this process stands: another replica's write is searchable here within a second;
 * - the index is opened from a stored snapshot plus the changes after it, and rebuilt from the
 *   data items only when there is none (an older deployment, a model switch nobody logged);
 *   a process holding the index writes the next snapshot once enough changed since the last;
 * - the open indexes are bounded by their estimated memory (`maxBytes`): past it, the least
 *   recently searched are dropped from `entries` (evicted). An evicted dataset is what a
 *   dataset this process never opened is: its writes still go to the log (and apply to nothing
 *   here), and its next search opens it again from the snapshot and the log, like another
 *   replica would. Everything else keyed by dataset forgets nothing it needs: an open in flight
 *   (`opening`, `pendingWrites`) is not in `entries` until it is published, and is then the
 *   most recent; a refresh or collection read on an evicted entry finishes on that object, which
 *   nobody keeps; the compactor writes snapshots only of the entry `entries` holds. A search
 *   holding an entry that is evicted meanwhile finishes on it: a consistent state, missing at
 *   most writes made while that search ran. A dataset larger than the bound alone is opened,
 *   searched and kept as the only index (everything else is evicted for it) until another
 *   dataset's open evicts it in turn.
 */
export function createDatasetIndex(deps: DatasetIndexDeps, options: DatasetIndexOptions = {}) {
  const now = options.now ?? (() => Date.now());
  const entries = new Map<string, DatasetEntry>();
  // Snapshots are written for the entry this process holds for the dataset, not a replaced one.
  const compactor = createCompactor(deps, { ...options, now }, (entry) => entries.get(entry.datasetId) === entry);
  const maybeCompact = compactor.maybeCompact;
  const opening = new Map<string, Promise<DatasetEntry>>();
  // Local writes made while a dataset (re)opens, replayed onto what it opens to.
  const pendingWrites = new Map<string, ((entry: DatasetEntry) => void)[]>();
  const refreshing = new Map<string, Promise<void>>();
  const heads = new Map<string, { seq: number; readAt: number }>();
  const collectionLists = createCollectionLists({ collections: deps.collections, stamps: deps.stamps, now });
  let maxBytes = options.maxBytes ?? DEFAULT_SEARCH_INDEX_MAX_BYTES;
  let evictions = 0;

  const openBytes = () => {
    let total = 0;
    for (const entry of entries.values()) total += entry.estimatedBytes();
    return total;
  };

  /** Marks the entry as just searched: `entries` iterates least recently searched first. */
  function touch(entry: DatasetEntry) {
    if (entries.get(entry.datasetId) !== entry) return;
    entries.delete(entry.datasetId);
    entries.set(entry.datasetId, entry);
  }

  /**
   * Evicts the least recently searched entries while the open ones weigh more than the bound;
   * `keep` (the entry just opened) stays, alone if it is over the bound on its own.
   */
  function enforceBound(keep?: DatasetEntry) {
    let total = openBytes();
    for (const [datasetId, entry] of entries) {
      if (total <= maxBytes) return;
      if (entry === keep) continue;
      entries.delete(datasetId);
      heads.delete(datasetId); // a cache of the log head: the next write reads it again
      total -= entry.estimatedBytes();
      evictions += 1;
      deps.log.info(`search index of dataset ${datasetId} evicted (open indexes over ${maxBytes} bytes); its next search opens it again`);
    }
  }

  function noteHead(datasetId: string, seq: number, fromRead: boolean) {
    const known = heads.get(datasetId);
    const readAt = fromRead ? now() : (known?.readAt ?? 0);
    heads.set(datasetId, { seq: Math.max(seq, known?.seq ?? 0), readAt });
  }

  /** Replays the log after the entry's position; false when part of it is folded away (open the snapshot). */
  async function catchUp(entry: DatasetEntry): Promise<{ complete: boolean; applied: number }> {
    const records = await deps.store.changesAfter(entry.datasetId, entry.seq);
    let applied = 0;
    for (const record of records) {
      if (record.seq <= entry.seq) continue; // applied meanwhile, in order (a local write)
      if (record.seq !== entry.seq + 1 || !record.changes) return { complete: false, applied };
      for (const stored of record.changes) entry.apply(decodeChange(entry.datasetId, stored));
      entry.seq = record.seq;
      applied += 1;
    }
    entry.caughtUpAt = now();
    noteHead(entry.datasetId, entry.seq, true);
    return { complete: true, applied };
  }

  async function openEntry(datasetId: string, model: string, fromSources: boolean): Promise<DatasetEntry> {
    const queued: ((entry: DatasetEntry) => void)[] = [];
    pendingWrites.set(datasetId, queued);
    try {
      const started = now();
      let entry: DatasetEntry | undefined;
      let source = 'stored snapshot';
      for (let attempt = 0; attempt < 3 && !entry; attempt++) {
        // The stamp is read first: anything written after it moves it again.
        const stamp = await deps.stamps.read(searchStampKey(datasetId));
        let stored = fromSources ? null : await openFromSnapshot(deps.store, datasetId);
        if (stored === 'replaced') continue;
        if (stored === 'incomplete') {
          // The data items are the truth: rebuilt from them, the compactor then writes a whole snapshot.
          deps.log.warn(`the stored search index snapshot of dataset ${datasetId} lacks parts; rebuilding it from the data items`);
          stored = null;
        }
        if (!stored) source = 'data items';
        const candidate = stored ?? (await openFromSources(deps, datasetId, model));
        candidate.stamp = stamp;
        if ((await catchUp(candidate)).complete) entry = candidate;
      }
      if (!entry) throw Errors.contended(`The search index of dataset ${datasetId}`);
      for (const write of queued) write(entry);
      deps.log.info(`search index of dataset ${datasetId} opened from its ${source} in ${now() - started} ms (${entry.items.size} items, ${entry.vectors?.size ?? 0} vectors)`);
      // Published in the same synchronous step as the replay: no local write falls in between.
      entries.set(datasetId, entry);
      enforceBound(entry);
      maybeCompact(entry);
      return entry;
    } finally {
      pendingWrites.delete(datasetId);
    }
  }

  function open(datasetId: string, model: string, fromSources = false): Promise<DatasetEntry> {
    let pending = opening.get(datasetId);
    if (!pending) {
      pending = openEntry(datasetId, model, fromSources).finally(() => opening.delete(datasetId));
      opening.set(datasetId, pending);
    }
    return pending;
  }

  /** `stamp`: the value that moved (undefined for a catch-up by age, which reads the log without it). */
  async function refresh(entry: DatasetEntry, stamp: string | undefined): Promise<void> {
    const previousCatchUp = entry.caughtUpAt;
    const { complete, applied } = await catchUp(entry);
    let behind = !complete;
    // Nothing new although the stamp moved: this process's own write, changes long folded away,
    // or the dataset was deleted (its stored index went with it). The first is the only one
    // after a recent catch-up of a dataset that is still searched (searches are authorised on
    // the dataset first; the sweep frees deleted ones): no meta read then.
    const recent = now() - previousCatchUp >= 0 && now() - previousCatchUp < LOG_COMPLETE_WITHIN_MS;
    if (complete && applied === 0 && !recent) {
      const meta = await deps.store.meta(entry.datasetId);
      if (!meta && entry.snapshotSeq >= 0) {
        if (entries.get(entry.datasetId) === entry) entries.delete(entry.datasetId);
        heads.delete(entry.datasetId);
        return;
      }
      behind = (meta?.seq ?? 0) > entry.seq;
    }
    if (behind) await open(entry.datasetId, entry.model);
    else if (stamp !== undefined) entry.stamp = stamp;
    if (applied > 0) enforceBound(entries.get(entry.datasetId));
    maybeCompact(entry);
  }

  /** The dataset's entry, opened if needed and brought up to date with the log when its stamp moved. */
  async function current(datasetId: string, model: string): Promise<DatasetEntry> {
    let entry = entries.get(datasetId) ?? (await open(datasetId, model));
    const aged = now() - entry.caughtUpAt >= CATCH_UP_MAX_AGE_MS;
    // Aged, the log is read to its end whatever the stamp says: the stamp is not read. The entry
    // keeps the older one, so a stamp moved by changes this replay applies costs one more replay
    // (finding nothing) on the next search after its lease.
    const stamp = aged ? undefined : await deps.stamps.read(searchStampKey(datasetId));
    if (aged || entry.stamp !== stamp) {
      let pending = refreshing.get(datasetId);
      if (!pending) {
        pending = refresh(entry, stamp).finally(() => refreshing.delete(datasetId));
        refreshing.set(datasetId, pending);
      }
      await pending;
      entry = entries.get(datasetId) ?? (await open(datasetId, model));
    }
    // Searched with another model than the index holds and no logged switch explains it.
    if (entry.model !== model) entry = await open(datasetId, model, true);
    touch(entry);
    return entry;
  }

  async function append(datasetId: string, changes: IndexChange[]): Promise<number> {
    const stored = changes.map(encodeChange);
    const known = heads.get(datasetId);
    let head = known && now() - known.readAt < HEAD_TRUST_MS ? known.seq : await readHead(datasetId);
    for (let attempt = 0; attempt < APPEND_ATTEMPTS; attempt++) {
      const seq = Math.max(head, entries.get(datasetId)?.seq ?? 0) + 1;
      if (await deps.store.tryAppend(datasetId, seq, stored, new Date(now()))) {
        noteHead(datasetId, seq, false);
        return seq;
      }
      head = await readHead(datasetId);
    }
    // The data itself is written: its index write is repaired from the journal, so look before writing again.
    throw Errors.changeInterrupted();
  }

  async function readHead(datasetId: string): Promise<number> {
    const head = await deps.store.head(datasetId);
    noteHead(datasetId, head, true);
    return head;
  }

  /** Logs changes of one dataset, applies them here and tells the other processes. */
  async function record(datasetId: string, changes: IndexChange[]): Promise<void> {
    if (changes.length === 0) return;
    const seq = await append(datasetId, changes);
    const write = (entry: DatasetEntry) => {
      if (entry.seq >= seq) return; // the log brought it already
      for (const change of changes) entry.apply(change);
      if (entry.seq === seq - 1) entry.seq = seq;
    };
    const loaded = entries.get(datasetId);
    if (loaded) {
      write(loaded);
      enforceBound();
    }
    pendingWrites.get(datasetId)?.push(write);
    await deps.bumps.bump(searchStampKey(datasetId));
    if (loaded) maybeCompact(loaded);
  }

  const byDataset = <T extends { datasetId: string }>(rows: T[]) => groupBy(rows, (row) => row.datasetId);

  return {
    /**
     * Opens the dataset's index (start-up warm-up). False once the open indexes reach the bound,
     * and the warm-up stops: nothing is opened when they reach it already, and the open that
     * passes it (evicting the least recently searched once) is the last, so a warm-up never goes
     * on opening indexes that evict one another.
     */
    async warm(datasetId: string, model: string): Promise<boolean> {
      if (!entries.has(datasetId) && openBytes() >= maxBytes) return false;
      const evicted = evictions;
      await current(datasetId, model);
      return evictions === evicted && openBytes() < maxBytes;
    },
    isLoaded: (datasetId: string) => entries.has(datasetId),
    /** Sets the bound on the open indexes' estimated memory (SEARCH_INDEX_MAX_BYTES), evicting past it. */
    setMaxBytes(bytes: number): void {
      maxBytes = bytes;
      enforceBound();
    },
    /** For metrics: open indexes, their estimated bytes, and evictions since start. */
    stats: () => ({ open: entries.size, bytes: openBytes(), evictions }),
    /** Datasets whose log head this process remembers (tests: dropped with their entries). */
    rememberedHeads: () => heads.size,

    /** Up-to-date entries of the datasets, each with its collections (one read per dataset, then cached). */
    async prepare(teamId: string, datasetIds: string[], model: string): Promise<PreparedDataset[]> {
      const entries = await Promise.all(datasetIds.map((id) => current(id, model)));
      return Promise.all(entries.map(async (entry) => ({ entry, collections: await collectionLists.of(teamId, entry) })));
    },

    /**
     * Data items per collection of a dataset, from its index (opened if needed): counting them in
     * the database reads every item of the team on FerretDB (8 s at 20,000). Another process's
     * writes show once the dataset's stamp moves (leased 1 s), as in search.
     */
    async countItems(datasetId: string, model: string, collectionIds: readonly string[]): Promise<Map<string, number>> {
      return (await current(datasetId, model)).countItems(collectionIds);
    },

    /** Collections by id for showing results; collections created since the cache was filled are read once. */
    async collectionInfo(teamId: string, prepared: readonly PreparedDataset[], ids: string[]): Promise<Map<string, CollectionInfo>> {
      const find = (lists: readonly ReadonlyMap<string, CollectionInfo>[]) =>
        new Map(lists.flatMap((list) => ids.flatMap((id) => (list.has(id) ? [[id, list.get(id)!] as const] : []))));
      const found = find(prepared.map((dataset) => dataset.collections));
      if (found.size === new Set(ids).size) return found;
      return find(await Promise.all(prepared.map((dataset) => collectionLists.load(teamId, dataset.entry))));
    },

    // Writes: each after the database write it describes, through the context of its index write (index-writes.ts, which checks the lock first), awaited (the log is what other processes read).
    addVectors: async (rows: VectorRow[]) => {
      for (const [datasetId, group] of byDataset(rows)) {
        for (const model of new Set(group.map((row) => row.model))) {
          const vectors = group.filter((row) => row.model === model).map((row) => ({ id: row.id, dataId: row.dataId, vector: row.vector }));
          await record(datasetId, [{ kind: 'putVectors', model, vectors }]);
        }
      }
    },
    removeVectors: (datasetId: string, ids: string[]) => (ids.length ? record(datasetId, [{ kind: 'removeVectors', ids }]) : Promise.resolve()),
    putItems: async (items: (IndexedItem & { fullTextTokens?: readonly string[] })[]) => {
      for (const [datasetId, group] of byDataset(items)) {
        const plainItems = group.map(({ _id, collectionId, q, a, chunkIndex }) => ({ _id, datasetId, collectionId, q, a, chunkIndex }));
        await record(datasetId, [{ kind: 'putItems', items: plainItems }]);
      }
    },
    removeItems: (datasetId: string, ids: string[]) => record(datasetId, [{ kind: 'removeItems', ids }]),
    removeCollections: async (collections: { _id: string; datasetId: string }[]) => {
      for (const [datasetId, group] of byDataset(collections)) await record(datasetId, [{ kind: 'removeCollections', ids: group.map((c) => c._id) }]);
    },
    switchModel: (datasetId: string, model: string) => record(datasetId, [{ kind: 'switchModel', model }]),
    /** A collection's name, source or forbid flag changed. */
    collectionsChanged: (datasetId: string) => record(datasetId, [{ kind: 'collectionsChanged' }]),
    async dropDataset(datasetId: string): Promise<void> {
      await compactor.finished(datasetId);
      await deps.store.dropDataset(datasetId);
      entries.delete(datasetId);
      heads.delete(datasetId);
      await deps.bumps.bump(searchStampKey(datasetId));
    },
    /**
     * Frees the indexes of datasets deleted since they were opened: the process that deleted one
     * dropped only its own, and nobody searches a deleted dataset (what refreshes an index). Run
     * periodically; one `_id` read per dataset held. A snapshot this process was writing for one
     * is waited for and its stored parts dropped again. Returns how many went.
     */
    async evictDeleted(): Promise<number> {
      // Heads too: a dataset written here but never opened (or evicted) has one and no entry.
      const held = [...new Set([...entries.keys(), ...heads.keys()])];
      if (held.length === 0) return 0;
      const existing = await deps.datasets.existingIds(held);
      const gone = held.filter((id) => !existing.has(id));
      for (const datasetId of gone) {
        entries.delete(datasetId);
        heads.delete(datasetId);
        await compactor.finished(datasetId);
        await deps.store.dropDataset(datasetId);
      }
      return gone.length;
    },

    // Searches by dataset ids (tests and tools); the search service works on prepared entries.
    async vectorSearch(datasetIds: string[], model: string, query: number[], k: number, exclude: ReadonlySet<string>): Promise<Hit[]> {
      const prepared = await Promise.all(datasetIds.map((id) => current(id, model)));
      return vectorSearchIn(prepared, query, k, exclude);
    },
    async fullTextSearch(datasetIds: string[], model: string, tokens: string[], k: number, exclude: ReadonlySet<string>): Promise<Hit[]> {
      const prepared = await Promise.all(datasetIds.map((id) => current(id, model)));
      return fullTextSearchIn(prepared, tokens, k, exclude);
    },

    /** Waits for snapshot writes in progress (before the database closes). */
    close: () => compactor.close(),
  };
}

export type DatasetIndex = ReturnType<typeof createDatasetIndex>;
