import { LruMap } from '../../../infra/lru-map.js';
import { escapeRegex } from '../../../infra/mongo.js';
import { createStampedReadModel } from '../../../infra/stamped-read-model.js';
import type { VersionStamps } from '../../../infra/version-stamps.js';
import type { CollectionOwner } from './data.repo.js';
import { MAX_NAMED_IDS, type RecordedChange } from './data-changes.repo.js';

/** The version stamp of a collection's data list: bumped by every write of its data items (data.repo.ts). */
export const dataListStampKey = (collectionId: string) => `dataset-data:${collectionId}`;

/** What the data list shows of an item, and its place in the list. */
export interface ListedData {
  _id: string;
  q: string;
  a: string;
  chunkIndex: number;
  /** `updateTime` in milliseconds: the list's second sort key. */
  updatedAt: number;
}

/** A collection's items in list order, or null when it holds too many to keep (pages are then read from the database). */
interface CollectionData {
  rows: ListedData[] | null;
  /** Characters of q and a held, and each row's own cost in characters: what the process keeps is bounded by their sum. */
  chars: number;
  /** The recorded changes (data-changes.repo.ts) the rows already show. */
  applied: ReadonlySet<string>;
}

export interface DataListQuery {
  /** A case-insensitive substring of q or a. */
  searchText?: string;
  skip: number;
  limit: number;
}

export interface DataListReadModelDeps {
  /** Unleased stamps: each page reads its collection's stamp, so a write is seen at once everywhere. */
  stamps: VersionStamps;
  /** At most `limit` items of the collection (any order): the read model sorts them. */
  load(owner: CollectionOwner, limit: number): Promise<ListedData[]>;
  /** Those of `ids` still in the collection. */
  loadByIds(owner: CollectionOwner, ids: string[]): Promise<ListedData[]>;
  /** The collection's recorded changes still kept, written by every data write before its stamp moves. */
  changes(owner: CollectionOwner): Promise<RecordedChange[]>;
  /** Collections of more items are not kept. 0 keeps none. */
  maxItems: number;
  /** Characters kept by the process (q, a and each row's overhead), all collections together; one collection keeps at most a quarter. */
  maxChars: number;
  now?: () => number;
}

/**
 * How long a collection found too large is paged by the database without another try: its
 * stamp moves with every write (every batch of a large import), and each try reads up to
 * `maxItems + 1` items.
 */
export const TOO_LARGE_RETRY_MS = 5 * 60_000;

/** A kept view is loaded in full again at this age, whatever its stamp (a safety net for a lost bump). */
export const DATA_LIST_MAX_AGE_MS = 5 * 60_000;
/**
 * How long recorded changes are kept: a refresh reads the changes since its view's full load,
 * at most DATA_LIST_MAX_AGE_MS ago, with room for the writers' clocks.
 */
export const DATA_CHANGES_KEPT_MS = 3 * DATA_LIST_MAX_AGE_MS;

/** A row's memory besides its texts (object, id string, numbers), counted as that many characters. */
const ROW_OVERHEAD_CHARS = 64;

/** MongoDB's order of the former query: `chunkIndex` ascending, then newest `updateTime`, then `_id`. */
const byListOrder = (x: ListedData, y: ListedData) => x.chunkIndex - y.chunkIndex || y.updatedAt - x.updatedAt || (x._id < y._id ? -1 : x._id > y._id ? 1 : 0);

/**
 * The page a data list query shows of a collection's items (in list order): the semantics of the
 * former MongoDB query (q or a matching the escaped text, untrimmed, case-insensitively, as `$regex` with `i`;
 * a blank text filters nothing; the total counts every match).
 */
export function selectDataPage(rows: readonly ListedData[], query: DataListQuery): { items: ListedData[]; total: number } {
  // Matched as typed, spaces included (as the reference); only a blank text is no search.
  const text = query.searchText;
  let matches = rows;
  if (text?.trim()) {
    const pattern = new RegExp(escapeRegex(text), 'i');
    matches = rows.filter((row) => pattern.test(row.q) || pattern.test(row.a));
  }
  // A limit of 0 is no limit, as in MongoDB.
  const end = query.limit > 0 ? query.skip + query.limit : undefined;
  return { items: matches.slice(query.skip, end), total: matches.length };
}

/**
 * The data list of each collection, per process: a collection's items in list order (q, a and
 * the sort keys; no indexes or search tokens), kept while its stamp is unchanged, so a page costs
 * one `_id` read instead of a sorted query and a count. On FerretDB 1.24, which sorts in its own
 * process, that query read every item of the collection for every page. After a write naming a
 * few items, a kept view reads only those again (by `_id` each); otherwise the whole collection.
 * Keyed by team, dataset and collection: a view is only ever served to the team it was read for.
 */
export function createDataListReadModel(deps: DataListReadModelDeps) {
  const perCollection = Math.floor(deps.maxChars / 4);
  const now = deps.now ?? (() => Date.now());
  /** Collections found too large to keep: when to try again. */
  const tooLarge = new LruMap<number>(10_000);
  const cacheKey = (owner: CollectionOwner) => `${owner.teamId}/${owner.datasetId}/${owner.collectionId}`;
  /** The view of `rows` (sorted in place), or none when they are too many to keep. */
  const keep = (owner: CollectionOwner, rows: ListedData[], changes: RecordedChange[]): CollectionData => {
    const applied = new Set(changes.map((change) => change.id));
    const chars = rows.reduce((sum, row) => sum + row.q.length + row.a.length + ROW_OVERHEAD_CHARS, 0);
    if (rows.length > deps.maxItems || chars > perCollection) {
      tooLarge.set(cacheKey(owner), now() + TOO_LARGE_RETRY_MS);
      return { rows: null, chars: 0, applied };
    }
    return { rows: rows.sort(byListOrder), chars, applied };
  };
  const model = createStampedReadModel<CollectionOwner, CollectionData>({
    stamps: deps.stamps,
    cacheKey,
    stampKey: (owner) => dataListStampKey(owner.collectionId),
    load: async (owner) => {
      // The changes first: every write they name has landed, so the rows read next show it.
      const changes = await deps.changes(owner);
      return keep(owner, await deps.load(owner, deps.maxItems + 1), changes);
    },
    refresh: async (owner, previous) => {
      if (!previous.rows) return null;
      const changes = await deps.changes(owner);
      const unseen = changes.filter((change) => !previous.applied.has(change.id));
      // The stamp moved with no change recorded (its record failed), or a change names no items: reload.
      if (unseen.length === 0 || unseen.some((change) => change.ids === null)) return null;
      const touched = new Set(unseen.flatMap((change) => change.ids ?? []));
      if (touched.size > MAX_NAMED_IDS) return null;
      const current = await deps.loadByIds(owner, [...touched]);
      return keep(owner, [...previous.rows.filter((row) => !touched.has(row._id)), ...current], changes);
    },
    maxViews: 1000,
    maxAgeMs: DATA_LIST_MAX_AGE_MS,
    weight: { weigh: (view) => view.chars, max: deps.maxChars },
    now,
  });
  return {
    /** The page from the kept items; null when the collection is not kept (too large, or keeping is off). */
    async page(teamId: string, collection: { _id: string; datasetId: string }, query: DataListQuery): Promise<{ items: ListedData[]; total: number } | null> {
      if (deps.maxItems === 0) return null;
      const owner = { teamId, datasetId: collection.datasetId, collectionId: collection._id };
      if ((tooLarge.get(cacheKey(owner)) ?? 0) > now()) return null;
      const view = await model.view(owner);
      return view.rows ? selectDataPage(view.rows, query) : null;
    },
  };
}

export type DataListReadModel = ReturnType<typeof createDataListReadModel>;
