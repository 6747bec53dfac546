import { VectorIndex } from '../../../domain/vector-index.js';
import type { VectorRepo, VectorRow } from './vector.repo.js';

interface Entry {
  model: string;
  /** Created with the first vector (its length fixes the dimensions). */
  index?: VectorIndex;
  /** vector id → owning data item and collection, for collapsing hits and filtering. */
  owners: Map<string, { dataId: string; collectionId: string }>;
}

export interface VectorHit {
  vectorId: string;
  dataId: string;
  collectionId: string;
  datasetId: string;
  score: number;
}

/**
 * One in-process index per dataset, built from MongoDB on first use and kept current on writes.
 * MongoDB stays the source of truth; a dataset's index is dropped when its vector model changes.
 */
export function createVectorCache(repo: VectorRepo) {
  const entries = new Map<string, Entry>();
  const loading = new Map<string, Promise<Entry>>();

  function put(entry: Entry, row: VectorRow) {
    entry.index ??= new VectorIndex(row.vector.length);
    if (row.vector.length !== entry.index.dimensions) return;
    entry.index.upsert(row.id, row.vector);
    entry.owners.set(row.id, { dataId: row.dataId, collectionId: row.collectionId });
  }

  async function load(datasetId: string, model: string): Promise<Entry> {
    const entry: Entry = { model, owners: new Map() };
    for await (const row of repo.streamDataset(datasetId, model)) put(entry, row);
    return entry;
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
    const entry = await pending;
    entries.set(datasetId, entry);
    return entry;
  }

  return {
    warm: get,
    /** Applies written vectors to loaded indexes (unloaded datasets read them from MongoDB later). */
    added(rows: VectorRow[]) {
      for (const row of rows) {
        const entry = entries.get(row.datasetId);
        if (entry && entry.model === row.model) put(entry, row);
      }
    },
    removed(datasetId: string, vectorIds: string[]) {
      const entry = entries.get(datasetId);
      if (!entry) return;
      for (const id of vectorIds) {
        entry.index?.remove(id);
        entry.owners.delete(id);
      }
    },
    /** Forget whole datasets (deleted, or a collection cascade we do not track id by id). */
    drop(datasetIds: string[]) {
      for (const id of datasetIds) entries.delete(id);
    },
    async search(datasetIds: string[], model: string, query: number[], k: number, excludeCollections: Set<string>): Promise<VectorHit[]> {
      const hits: VectorHit[] = [];
      for (const datasetId of datasetIds) {
        const entry = await get(datasetId, model);
        if (!entry.index || entry.index.dimensions !== query.length) continue;
        const filter = excludeCollections.size > 0 ? (id: string) => !excludeCollections.has(entry.owners.get(id)?.collectionId ?? '') : undefined;
        for (const hit of entry.index.search(query, k, filter)) {
          const owner = entry.owners.get(hit.id);
          if (owner) hits.push({ vectorId: hit.id, dataId: owner.dataId, collectionId: owner.collectionId, datasetId, score: hit.score });
        }
      }
      return hits.sort((a, b) => b.score - a.score).slice(0, k);
    },
  };
}

export type VectorCache = ReturnType<typeof createVectorCache>;
