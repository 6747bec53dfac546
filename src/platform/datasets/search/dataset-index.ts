import { bm25Scores } from '../../../domain/full-text.js';
import { VectorIndex } from '../../../domain/vector-index.js';
import type { DataRepo } from '../data/data.repo.js';
import type { VectorRepo, VectorRow } from './vector.repo.js';

/** What search needs of a data item, kept in memory. */
export interface IndexedItem {
  _id: string;
  datasetId: string;
  collectionId: string;
  q: string;
  a: string;
  chunkIndex: number;
  fullTextTokens: string[];
}

interface Entry {
  model: string;
  /** Created with the first vector (its length fixes the dimensions). */
  vectors?: VectorIndex;
  /** vector id → data item id. */
  owners: Map<string, string>;
  items: Map<string, IndexedItem>;
  /** token → ids of the items holding it (the full-text inverted index). */
  postings: Map<string, Set<string>>;
  totalTokens: number;
}

export interface Hit {
  item: IndexedItem;
  score: number;
}

/**
 * One in-process search index per dataset: its vectors (of the dataset's current model), and
 * its items with an inverted token index for full-text recall. Built from MongoDB on first use,
 * kept current by this process's writes; MongoDB stays the source of truth (a dataset's entry is
 * dropped and rebuilt when in doubt: deletes of whole collections, a model switch).
 */
export function createDatasetIndex(repos: { vectors: VectorRepo; data: DataRepo }) {
  const entries = new Map<string, Entry>();
  const loading = new Map<string, Promise<Entry>>();

  function putVector(entry: Entry, row: VectorRow) {
    entry.vectors ??= new VectorIndex(row.vector.length);
    if (row.vector.length !== entry.vectors.dimensions) return;
    entry.vectors.upsert(row.id, row.vector);
    entry.owners.set(row.id, row.dataId);
  }

  function removeItem(entry: Entry, id: string) {
    const previous = entry.items.get(id);
    if (!previous) return;
    for (const token of new Set(previous.fullTextTokens)) entry.postings.get(token)?.delete(id);
    entry.totalTokens -= previous.fullTextTokens.length;
    entry.items.delete(id);
  }

  function putItem(entry: Entry, item: IndexedItem) {
    removeItem(entry, item._id);
    entry.items.set(item._id, item);
    entry.totalTokens += item.fullTextTokens.length;
    for (const token of new Set(item.fullTextTokens)) {
      const set = entry.postings.get(token) ?? new Set<string>();
      set.add(item._id);
      entry.postings.set(token, set);
    }
  }

  // Writes made while a dataset loads are queued and replayed onto the loaded entry, so an
  // item written during the (possibly long) load is never missing from the index.
  const pendingWrites = new Map<string, ((entry: Entry) => void)[]>();

  function whenLoaded(datasetId: string, write: (entry: Entry) => void) {
    const entry = entries.get(datasetId);
    if (entry) write(entry);
    pendingWrites.get(datasetId)?.push(write);
  }

  async function load(datasetId: string, model: string): Promise<Entry> {
    const entry: Entry = { model, owners: new Map(), items: new Map(), postings: new Map(), totalTokens: 0 };
    const queued = pendingWrites.get(datasetId) ?? [];
    pendingWrites.set(datasetId, queued);
    try {
      for await (const item of repos.data.streamDataset(datasetId)) putItem(entry, { ...item, fullTextTokens: item.fullTextTokens ?? [] });
      for await (const row of repos.vectors.streamDataset(datasetId, model)) putVector(entry, row);
      for (const write of queued) write(entry);
      // Published in the same synchronous step as the replay: no write can fall in between.
      entries.set(datasetId, entry);
      return entry;
    } finally {
      pendingWrites.delete(datasetId);
    }
  }

  async function get(datasetId: string, model: string): Promise<Entry> {
    const existing = entries.get(datasetId);
    if (existing && existing.model === model) return existing;
    const key = `${datasetId}:${model}`;
    let pending = loading.get(key);
    if (!pending) {
      pending = load(datasetId, model).finally(() => loading.delete(key));
      loading.set(key, pending);
    }
    return pending;
  }

  return {
    warm: get,
    isLoaded: (datasetId: string) => entries.has(datasetId),
    /** Written vectors reach loaded entries (unloaded datasets read them from MongoDB later). */
    addVectors(rows: VectorRow[]) {
      for (const row of rows) {
        whenLoaded(row.datasetId, (entry) => {
          if (entry.model === row.model) putVector(entry, row);
        });
      }
    },
    removeVectors(datasetId: string, vectorIds: string[]) {
      whenLoaded(datasetId, (entry) => {
        for (const id of vectorIds) {
          entry.vectors?.remove(id);
          entry.owners.delete(id);
        }
      });
    },
    putItems(items: IndexedItem[]) {
      for (const item of items) whenLoaded(item.datasetId, (entry) => putItem(entry, item));
    },
    removeItems(datasetId: string, ids: string[]) {
      whenLoaded(datasetId, (entry) => {
        for (const id of ids) removeItem(entry, id);
      });
    },
    drop(datasetIds: string[]) {
      for (const id of datasetIds) entries.delete(id);
    },
    /** Nearest items by their best index, best first (items of excluded collections left out). */
    async vectorSearch(datasetIds: string[], model: string, query: number[], k: number, exclude: Set<string>): Promise<Hit[]> {
      const best = new Map<string, Hit>();
      for (const datasetId of datasetIds) {
        const entry = await get(datasetId, model);
        if (!entry.vectors || entry.vectors.dimensions !== query.length) continue;
        const accept = (vectorId: string) => {
          const item = entry.items.get(entry.owners.get(vectorId) ?? '');
          return item !== undefined && !exclude.has(item.collectionId);
        };
        for (const hit of entry.vectors.search(query, k * 3, accept)) {
          const item = entry.items.get(entry.owners.get(hit.id)!)!;
          if ((best.get(item._id)?.score ?? Number.NEGATIVE_INFINITY) < hit.score) best.set(item._id, { item, score: hit.score });
        }
      }
      return [...best.values()].sort((a, b) => b.score - a.score).slice(0, k);
    },
    /** BM25 over the items holding at least one query token, with exact corpus statistics. */
    async fullTextSearch(datasetIds: string[], model: string, tokens: string[], k: number, exclude: Set<string>): Promise<Hit[]> {
      const hits: Hit[] = [];
      for (const datasetId of datasetIds) {
        const entry = await get(datasetId, model);
        if (entry.items.size === 0) continue;
        const candidateIds = new Set<string>();
        for (const token of tokens) for (const id of entry.postings.get(token) ?? []) candidateIds.add(id);
        const candidates = [...candidateIds].map((id) => entry.items.get(id)!).filter((item) => !exclude.has(item.collectionId));
        const scores = bm25Scores(
          tokens,
          candidates.map((item) => ({ id: item._id, tokens: item.fullTextTokens })),
          { totalDocs: entry.items.size, avgDocLength: entry.totalTokens / entry.items.size, docFrequency: (token) => entry.postings.get(token)?.size ?? 0 },
        );
        for (const { id, score } of scores) if (score > 0) hits.push({ item: entry.items.get(id)!, score });
      }
      return hits.sort((a, b) => b.score - a.score).slice(0, k);
    },
  };
}

export type DatasetIndex = ReturnType<typeof createDatasetIndex>;
