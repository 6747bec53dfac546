import { TextIndex } from '../../../domain/text-index.js';
import { VectorIndex } from '../../../domain/vector-index.js';
import { searchTokens } from '../data/data-writer.js';

/** What search needs of a data item, kept in memory. */
export interface IndexedItem {
  _id: string;
  datasetId: string;
  collectionId: string;
  q: string;
  a: string;
  chunkIndex: number;
}

export interface IndexedVector {
  id: string;
  /** The data item owning the vector. */
  dataId: string;
  vector: ArrayLike<number>;
}

/** What search shows of a collection (name and source), and whether it is excluded. */
export interface CollectionInfo {
  _id: string;
  name: string;
  forbid: boolean;
  sourceId?: string;
}

/**
 * A dataset's collections as one team's search read them (collection-lists.ts), kept on its entry
 * until a collection change is applied (`forgetCollections`) or the team's collection stamp says
 * a collection was written since.
 */
export interface KeptCollections {
  /** The team that read them: another team's search never uses them. */
  teamId: string;
  /** The team's collection stamp, read before the list: every collection update or delete moves it. */
  stamp: string;
  byId: Map<string, CollectionInfo>;
  /** When the list was read, and when its stamp was last compared (process clock). */
  loadedAt: number;
  checkedAt: number;
}

/**
 * A dataset's entry with the collections one search works with, taken when it was prepared: a
 * collection change applied later empties `entry.collections`, never these (read as empty, the
 * forbidden collections of the whole dataset were searched).
 */
export interface PreparedDataset {
  entry: DatasetEntry;
  collections: ReadonlyMap<string, CollectionInfo>;
}

/** Collections whose items a search leaves out. */
export function forbiddenCollections(prepared: readonly PreparedDataset[]): Set<string> {
  const ids = new Set<string>();
  for (const { collections } of prepared) for (const collection of collections.values()) if (collection.forbid) ids.add(collection._id);
  return ids;
}

/**
 * One change to a dataset's search index, as written to the change log. Each sets or deletes
 * keys, so replaying a run of changes in order gives the same state whatever part of the run
 * was applied before (a process applies its own writes at once, then replays the log).
 */
export type IndexChange =
  | { kind: 'putItems'; items: IndexedItem[] }
  | { kind: 'removeItems'; ids: string[] }
  | { kind: 'putVectors'; model: string; vectors: IndexedVector[] }
  | { kind: 'removeVectors'; ids: string[] }
  | { kind: 'removeCollections'; ids: string[] }
  | { kind: 'switchModel'; model: string }
  | { kind: 'collectionsChanged' };

export interface Hit {
  item: IndexedItem;
  score: number;
}

/** Rows (items and vectors) a change touches: the measure of how far an entry is from its snapshot. */
export function changeSize(change: IndexChange): number {
  switch (change.kind) {
    case 'putItems':
      return change.items.length;
    case 'putVectors':
      return change.vectors.length;
    case 'removeItems':
    case 'removeVectors':
    case 'removeCollections':
      return change.ids.length;
    default:
      return 1;
  }
}

/**
 * Distinct terms of a full-text query scored, the rarest kept (TextIndex.search): a question
 * of up to 128 distinct words or 64 CJK characters (a character and a pair each) is searched
 * whole; a 10,000-character query naming 1,600 common words took ~1 s over 100,000 items.
 */
export const FULL_TEXT_QUERY_TERMS = 128;

/**
 * Estimated memory of the index, for the per-process bound (dataset-index.ts): measured with
 * 20,000 items (heap and array buffers after a collection) an item costs about 400 bytes
 * (object, ids, map entries) plus ~20 bytes per character of q and a (the string and its share
 * of the full-text postings; 17.6–22.5 measured) and ~130 per CJK character (each yields
 * unigram and bigram terms: 105–127 measured); a vector its floats (dimensions rounded up to 8)
 * plus ~150 bytes of ids and map entries. Growth slack of arrays is not counted, but the vector
 * storage is counted at its capacity (up to 4× the live rows), a full-text term no live item
 * uses any more at ~330 bytes (measured; the index drops them once they outnumber the live
 * ones), and every open entry at ~4 KB (maps, arrays and objects it has even when empty:
 * 4.2 KB measured per one-item entry).
 */
const ITEM_BYTES = 400;
const CHAR_BYTES = 20;
const WIDE_CHAR_BYTES = 130;
const VECTOR_OVERHEAD_BYTES = 150;
const DEAD_TERM_BYTES = 330;
export const ENTRY_BYTES = 4096;

function textBytes(text: string): number {
  let bytes = text.length * CHAR_BYTES;
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) >= 0x2e80) bytes += WIDE_CHAR_BYTES - CHAR_BYTES;
  return bytes;
}

/** An item's estimated share of an entry's memory (the item and its full-text postings). */
export const itemBytes = (item: IndexedItem): number => ITEM_BYTES + textBytes(item.q) + textBytes(item.a);

/**
 * The in-memory search index of one dataset: its items with a BM25 inverted index, the vectors
 * of its current model, and (once a search needed them) its collections. No I/O here.
 */
export class DatasetEntry {
  readonly items = new Map<string, IndexedItem>();
  text = new TextIndex();
  vectors: VectorIndex | undefined;
  /** vector id → data item id. */
  readonly owners = new Map<string, string>();
  /** Cached between searches; undefined once a change makes it stale (a search reads its own then: PreparedDataset). */
  collections: KeptCollections | undefined;
  /** Moves with every collections change, so a read started before one is not kept. */
  collectionsVersion = 0;
  /** The last change of the log applied in order (changes are numbered from 1). */
  seq = 0;
  /** The change the stored snapshot ends with, and rows changed since (when to write a new one). */
  snapshotSeq = 0;
  rowsSinceSnapshot = 0;
  /** The dataset's version stamp when the log was last read. */
  stamp: string | undefined;
  /** When the log was last read to its end (process clock). */
  caughtUpAt = 0;
  /** Estimated bytes of the items and their full-text postings, kept as items come and go. */
  private itemsBytes = 0;

  constructor(
    readonly datasetId: string,
    public model: string,
  ) {}

  putItem(item: IndexedItem, tokens: readonly string[] = searchTokens(item.q, item.a)): void {
    this.restoreItem(item);
    this.text.put(item._id, tokens);
  }

  /** Sets an item whose full-text postings the text index holds already (a snapshot's). */
  restoreItem(item: IndexedItem): void {
    const previous = this.items.get(item._id);
    if (previous) this.itemsBytes -= itemBytes(previous);
    this.items.set(item._id, item);
    this.itemsBytes += itemBytes(item);
  }

  /** Estimated memory this entry holds (items, full-text index, vectors): O(1). */
  estimatedBytes(): number {
    const vectors = this.vectors;
    // Rows at capacity (freed rows stay allocated until the storage halves); the kernel keeps a score per row.
    const vectorBytes = vectors ? vectors.capacitySlots * (vectors.stride * 4 + 4) + vectors.size * VECTOR_OVERHEAD_BYTES : 0;
    return ENTRY_BYTES + this.itemsBytes + this.text.deadTerms * DEAD_TERM_BYTES + vectorBytes;
  }

  putVector(row: IndexedVector): void {
    if (row.vector.length === 0) return;
    this.vectors ??= new VectorIndex(row.vector.length);
    if (row.vector.length !== this.vectors.dimensions) return;
    this.vectors.upsert(row.id, row.vector);
    this.owners.set(row.id, row.dataId);
  }

  apply(change: IndexChange): void {
    this.rowsSinceSnapshot += changeSize(change);
    switch (change.kind) {
      case 'putItems':
        for (const item of change.items) this.putItem(item);
        return;
      case 'removeItems':
        for (const id of change.ids) this.removeItem(id);
        return;
      case 'putVectors':
        if (change.model === this.model) for (const row of change.vectors) this.putVector(row);
        return;
      case 'removeVectors':
        for (const id of change.ids) this.removeVector(id);
        return;
      case 'removeCollections': {
        const gone = new Set(change.ids);
        const removed = new Set<string>();
        for (const item of this.items.values()) if (gone.has(item.collectionId)) removed.add(item._id);
        for (const id of removed) this.removeItem(id);
        for (const [vectorId, dataId] of this.owners) if (removed.has(dataId)) this.removeVector(vectorId);
        for (const id of gone) this.collections?.byId.delete(id);
        return;
      }
      case 'switchModel':
        this.model = change.model;
        this.vectors = undefined;
        this.owners.clear();
        return;
      case 'collectionsChanged':
        this.forgetCollections();
        return;
    }
  }

  /** The collections are read again by the next search that needs them. */
  forgetCollections(): void {
    this.collections = undefined;
    this.collectionsVersion += 1;
  }

  /** How many items each of `collectionIds` holds (the collection list's data amounts). */
  countItems(collectionIds: readonly string[]): Map<string, number> {
    const counts = new Map<string, number>(collectionIds.map((id) => [id, 0]));
    for (const item of this.items.values()) {
      const count = counts.get(item.collectionId);
      if (count !== undefined) counts.set(item.collectionId, count + 1);
    }
    return counts;
  }

  /** Items by their best vector, best first; items of excluded collections left out. */
  vectorSearch(query: readonly number[], k: number, exclude: ReadonlySet<string>): Hit[] {
    const vectors = this.vectors;
    if (!vectors || vectors.dimensions !== query.length || k < 1) return [];
    const wanted = k * 3;
    if (exclude.size === 0) {
      // Nothing excluded: a plain scan. Vectors whose item is gone (or not written yet) are
      // dropped afterwards; only if they cost places does the filtered scan below run.
      const hits = vectors.search(query, wanted);
      const found = this.bestPerItem(hits);
      if (hits.length < wanted || hits.every((hit) => this.items.has(this.owners.get(hit.id) ?? ''))) return found;
    }
    const accept = (vectorId: string) => {
      const item = this.items.get(this.owners.get(vectorId) ?? '');
      return item !== undefined && !exclude.has(item.collectionId);
    };
    return this.bestPerItem(vectors.search(query, wanted, accept));
  }

  fullTextSearch(tokens: readonly string[], k: number, exclude: ReadonlySet<string>): Hit[] {
    const excluded = exclude.size === 0 ? undefined : (id: string) => exclude.has(this.items.get(id)?.collectionId ?? '');
    return this.text.search(tokens, k, excluded, FULL_TEXT_QUERY_TERMS).map((hit) => ({ item: this.items.get(hit.id)!, score: hit.score }));
  }

  private bestPerItem(hits: { id: string; score: number }[]): Hit[] {
    const best = new Map<string, Hit>();
    for (const hit of hits) {
      const item = this.items.get(this.owners.get(hit.id) ?? '');
      if (item && !best.has(item._id)) best.set(item._id, { item, score: hit.score });
    }
    return [...best.values()];
  }

  private removeItem(id: string): void {
    const previous = this.items.get(id);
    if (previous) this.itemsBytes -= itemBytes(previous);
    this.items.delete(id);
    this.text.remove(id);
  }

  private removeVector(id: string): void {
    this.vectors?.remove(id);
    this.owners.delete(id);
  }
}

/** Best hit per item over several datasets, best first. */
export function vectorSearchIn(entries: DatasetEntry[], query: number[], k: number, exclude: ReadonlySet<string>): Hit[] {
  const hits = entries.flatMap((entry) => entry.vectorSearch(query, k, exclude));
  return hits.sort((a, b) => b.score - a.score).slice(0, k);
}

/** Best hits by full-text score over several datasets, best first. */
export function fullTextSearchIn(entries: DatasetEntry[], tokens: string[], k: number, exclude: ReadonlySet<string>): Hit[] {
  const hits = entries.flatMap((entry) => entry.fullTextSearch(tokens, k, exclude));
  return hits.sort((a, b) => b.score - a.score).slice(0, k);
}
