import type { DataRepo } from '../data/data.repo.js';
import { DatasetEntry } from './dataset-entry.js';
import { decodeSnapshot } from './index-codec.js';
import type { IndexStore } from './index-store.repo.js';
import type { VectorRepo } from './vector.repo.js';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';

/** Rows read between two yields to the event loop, so a long open does not stall requests. */
const YIELD_EVERY = 2000;

/**
 * The dataset's index as its stored snapshot holds it (positioned at the snapshot's last change);
 * null when there is none yet, 'replaced' when a newer one replaced it while it was read,
 * 'incomplete' when the current snapshot lacks parts (rebuild from the data items instead).
 */
export async function openFromSnapshot(store: IndexStore, datasetId: string): Promise<DatasetEntry | null | 'replaced' | 'incomplete'> {
  const meta = await store.meta(datasetId);
  if (!meta?.snapshot) return null;
  const parts = await store.parts(meta.snapshot);
  if (parts.length !== meta.parts) {
    // Parts of a replaced snapshot go once it is replaced; the same meta still there means they are missing.
    const again = await store.meta(datasetId);
    return again?.snapshot === meta.snapshot ? 'incomplete' : 'replaced';
  }
  const entry = await decodeSnapshot(datasetId, meta.model, parts);
  entry.seq = meta.seq;
  entry.snapshotSeq = meta.seq;
  return entry;
}

/**
 * The dataset's index rebuilt from its data items and vectors, positioned at the head of the log
 * read before: every logged change up to it was written to the data before it was logged.
 * No snapshot holds it yet (snapshotSeq −1), so one is written next.
 */
export async function openFromSources(repos: { data: DataRepo; vectors: VectorRepo; store: IndexStore }, datasetId: string, model: string): Promise<DatasetEntry> {
  const head = await repos.store.head(datasetId);
  const entry = new DatasetEntry(datasetId, model);
  let count = 0;
  for await (const item of repos.data.streamDataset(datasetId)) {
    const { _id, collectionId, q, a, chunkIndex, fullTextTokens } = item;
    entry.putItem({ _id, datasetId, collectionId, q, a, chunkIndex }, fullTextTokens ?? undefined);
    if (++count % YIELD_EVERY === 0) await yieldToEventLoop();
  }
  for await (const row of repos.vectors.streamDataset(datasetId, model)) {
    entry.putVector(row);
    if (++count % YIELD_EVERY === 0) await yieldToEventLoop();
  }
  entry.seq = head;
  entry.snapshotSeq = -1;
  return entry;
}
