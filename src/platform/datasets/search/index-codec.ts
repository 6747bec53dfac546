import { promisify } from 'node:util';
import { deflateRaw, inflateRaw } from 'node:zlib';
import { appendAll } from '../../../domain/append-all.js';
import { TextIndex, type TextIndexState } from '../../../domain/text-index.js';
import { DatasetEntry, type IndexChange, type IndexedItem } from './dataset-entry.js';

/**
 * How a dataset's search index is stored: a snapshot in parts of a few megabytes (items as
 * deflated JSON, the full-text index as its terms and numbered documents, vectors as raw
 * float32 rows with their ids), and changes as small documents. Opening 100,000 items is a
 * handful of reads and no tokenising, instead of one read per data item and vector.
 */
const deflate = promisify(deflateRaw);
const inflate = promisify(inflateRaw);

/** Bytes of text or vectors per stored part (MongoDB documents stop at 16 MB). */
const PART_BYTES = 4 * 1024 * 1024;
/** Items tokenised between two yields to the event loop while an older snapshot opens. */
const YIELD_EVERY = 2000;

/** `terms` and `documents` parts are pieces of one TextIndexState, concatenated in part order. */
export type SnapshotPart =
  | { kind: 'items'; count: number; data: Uint8Array }
  | { kind: 'terms'; count: number; data: Uint8Array }
  | { kind: 'documents'; count: number; ids: string; data: Uint8Array }
  | { kind: 'vectors'; count: number; dims: number; ids: string; owners: string; data: Uint8Array };

/** What a snapshot holds, captured from an entry in one synchronous step. */
export interface SnapshotState {
  seq: number;
  model: string;
  items: IndexedItem[];
  text: TextIndexState;
  vectors?: { dims: number; ids: string[]; owners: string[]; rows: Float32Array };
}

export function captureSnapshot(entry: DatasetEntry): SnapshotState {
  const state: SnapshotState = { seq: entry.seq, model: entry.model, items: [...entry.items.values()], text: entry.text.exportState() };
  const vectors = entry.vectors;
  if (vectors && vectors.size > 0) {
    const rows = new Float32Array(vectors.size * vectors.dimensions);
    const ids: string[] = [];
    const owners: string[] = [];
    for (const [id, vector] of vectors.entries()) {
      rows.set(vector, ids.length * vectors.dimensions);
      ids.push(id);
      owners.push(entry.owners.get(id) ?? '');
    }
    state.vectors = { dims: vectors.dimensions, ids, owners, rows };
  }
  return state;
}

export async function encodeSnapshot(state: SnapshotState): Promise<SnapshotPart[]> {
  const parts: SnapshotPart[] = [];
  let batch: string[] = [];
  let size = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    parts.push({ kind: 'items', count: batch.length, data: await deflate(Buffer.from(`[${batch.join(',')}]`)) });
    batch = [];
    size = 0;
  };
  for (const item of state.items) {
    const json = JSON.stringify([item._id, item.collectionId, item.chunkIndex, item.q, item.a]);
    batch.push(json);
    size += json.length;
    if (size >= PART_BYTES) await flush();
  }
  await flush();
  parts.push(...(await encodeText(state.text)));
  const vectors = state.vectors;
  if (vectors) {
    const perPart = Math.max(1, Math.floor(PART_BYTES / (vectors.dims * 4)));
    for (let start = 0; start < vectors.ids.length; start += perPart) {
      const end = Math.min(vectors.ids.length, start + perPart);
      const rows = vectors.rows.subarray(start * vectors.dims, end * vectors.dims);
      parts.push({
        kind: 'vectors',
        count: end - start,
        dims: vectors.dims,
        ids: vectors.ids.slice(start, end).join('\n'),
        owners: vectors.owners.slice(start, end).join('\n'),
        data: new Uint8Array(rows.buffer, rows.byteOffset, rows.byteLength),
      });
    }
  }
  return parts;
}

/** The full-text index in parts: terms as deflated lines, documents as their bytes and ids, cut anywhere. */
async function encodeText(text: TextIndexState): Promise<SnapshotPart[]> {
  const parts: SnapshotPart[] = [];
  const termsPerPart = 200_000;
  for (let start = 0; start < text.terms.length; start += termsPerPart) {
    const terms = text.terms.slice(start, start + termsPerPart);
    parts.push({ kind: 'terms', count: terms.length, data: await deflate(Buffer.from(terms.join('\n'))) });
  }
  const pieces = Math.max(1, Math.ceil(text.documents.byteLength / PART_BYTES));
  const idsPerPiece = Math.ceil(text.ids.length / pieces);
  for (let piece = 0; piece < pieces; piece++) {
    const ids = text.ids.slice(piece * idsPerPiece, (piece + 1) * idsPerPiece);
    const data = text.documents.subarray(piece * PART_BYTES, (piece + 1) * PART_BYTES);
    parts.push({ kind: 'documents', count: ids.length, ids: ids.join('\n'), data });
  }
  return parts;
}

async function decodeText(parts: SnapshotPart[]): Promise<TextIndex | undefined> {
  const terms: string[] = [];
  const ids: string[] = [];
  const chunks: Uint8Array[] = [];
  for (const part of parts) {
    if (part.kind === 'terms') appendAll(terms, (await inflate(part.data)).toString('utf8').split('\n'));
    if (part.kind === 'documents') {
      if (part.count > 0) appendAll(ids, part.ids.split('\n'));
      chunks.push(part.data);
    }
  }
  if (chunks.length === 0) return undefined;
  return TextIndex.fromState({ terms, ids, documents: Buffer.concat(chunks) });
}

/** Rebuilds an entry from its snapshot parts (items first, so vectors find their owners). */
export async function decodeSnapshot(datasetId: string, model: string, parts: SnapshotPart[]): Promise<DatasetEntry> {
  const entry = new DatasetEntry(datasetId, model);
  const text = await decodeText(parts);
  let sinceYield = 0;
  for (const part of parts) {
    if (part.kind !== 'items') continue;
    const rows = JSON.parse((await inflate(part.data)).toString('utf8')) as [string, string, number, string, string][];
    for (const [_id, collectionId, chunkIndex, q, a] of rows) {
      const item = { _id, datasetId, collectionId, chunkIndex, q, a };
      if (text) entry.restoreItem(item);
      else entry.putItem(item); // a snapshot without its full-text index: tokenise
      if (++sinceYield >= YIELD_EVERY) {
        sinceYield = 0;
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
  }
  if (text) entry.text = text;
  for (const part of parts) {
    if (part.kind !== 'vectors') continue;
    const rows = floatsOf(part.data);
    const ids = part.ids.split('\n');
    const owners = part.owners.split('\n');
    if (rows.length !== part.count * part.dims || ids.length !== part.count) throw new Error(`vector part of dataset ${datasetId} is damaged`);
    for (let i = 0; i < ids.length; i++) entry.putVector({ id: ids[i]!, dataId: owners[i]!, vector: rows.subarray(i * part.dims, (i + 1) * part.dims) });
  }
  return entry;
}

/** A copy as float32 (the bytes of a stored part are not aligned for a view). */
function floatsOf(bytes: Uint8Array): Float32Array {
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return new Float32Array(copy.buffer);
}

/** A change as stored: vectors as one float32 block with their ids, items as plain fields. */
export type StoredChange =
  | { kind: 'putVectors'; model: string; dims: number; ids: string[]; owners: string[]; data: Uint8Array }
  | { kind: 'putItems'; items: Omit<IndexedItem, 'datasetId'>[] }
  | Exclude<IndexChange, { kind: 'putVectors' | 'putItems' }>;

export function encodeChange(change: IndexChange): StoredChange {
  if (change.kind === 'putItems') return { kind: 'putItems', items: change.items.map(({ _id, collectionId, chunkIndex, q, a }) => ({ _id, collectionId, chunkIndex, q, a })) };
  if (change.kind !== 'putVectors') return change;
  const dims = change.vectors[0]?.vector.length ?? 0;
  const rows = new Float32Array(change.vectors.length * dims);
  change.vectors.forEach((row, i) => {
    if (row.vector.length === dims) rows.set(row.vector, i * dims);
  });
  return {
    kind: 'putVectors',
    model: change.model,
    dims,
    ids: change.vectors.map((row) => row.id),
    owners: change.vectors.map((row) => row.dataId),
    data: new Uint8Array(rows.buffer),
  };
}

export function decodeChange(datasetId: string, stored: StoredChange): IndexChange {
  if (stored.kind === 'putItems') return { kind: 'putItems', items: stored.items.map((item) => ({ ...item, datasetId })) };
  if (stored.kind !== 'putVectors') return stored;
  const rows = floatsOf(stored.data);
  return {
    kind: 'putVectors',
    model: stored.model,
    vectors: stored.ids.map((id, i) => ({ id, dataId: stored.owners[i]!, vector: rows.subarray(i * stored.dims, (i + 1) * stored.dims) })),
  };
}
