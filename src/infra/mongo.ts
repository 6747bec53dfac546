import {
  type AnyBulkWriteOperation,
  type Collection,
  type CreateIndexesOptions,
  type Db,
  type Filter,
  type IndexSpecification,
  MongoClient,
  ObjectId,
  type OptionalUnlessRequiredId,
} from 'mongodb';
import { Errors } from './errors.js';

/** An index a repository needs; created at start-up by `ensureIndexes`. */
export interface IndexDeclaration {
  collection: string;
  key: IndexSpecification;
  options?: CreateIndexesOptions;
}

export interface Mongo {
  client: MongoClient;
  db: Db;
}

/** Creates the client; it connects on first use (or explicitly via `client.connect()`). */
export function createMongo(uri: string): Mongo {
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 5000, ignoreUndefined: true });
  // Database name comes from the URI path; `platform` when the URI names none.
  const db = client.db(new URL(uri.replace(/^mongodb(\+srv)?:/, 'http:')).pathname.slice(1) || 'platform');
  return { client, db };
}

export async function ensureIndexes(db: Db, declarations: readonly IndexDeclaration[]): Promise<void> {
  for (const declaration of declarations) {
    await db.collection(declaration.collection).createIndex(declaration.key, declaration.options ?? {});
  }
}

export function isObjectIdHex(value: unknown): value is string {
  return typeof value === 'string' && /^[0-9a-fA-F]{24}$/.test(value);
}

/** Parses an id from a request; a malformed one is a 400 naming the field, never a crash. */
export function toObjectId(value: unknown, field = 'id'): ObjectId {
  if (value instanceof ObjectId) return value;
  if (!isObjectIdHex(value)) throw Errors.missingParams(`Invalid field '${field}': expected a 24-character hex id`);
  return new ObjectId(value);
}

/** Escapes user text for use inside a $regex. */
export function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** A duplicate-key failure; for a bulk write, one where every failed write is a duplicate key. */
export function isDuplicateKeyError(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const writeErrors = (error as { writeErrors?: { code?: number }[] | { code?: number } }).writeErrors;
  const list = Array.isArray(writeErrors) ? writeErrors : writeErrors ? [writeErrors] : [];
  if (list.length === 0) return (error as { code?: number }).code === 11000;
  return list.every((entry) => entry.code === 11000);
}

/**
 * Inserts the documents whose unique keys are new and leaves the others as they are
 * (unordered, so one duplicate does not stop the rest); returns how many went in. One bulk
 * insert is far cheaper than an upsert per document on FerretDB 1.x.
 */
export async function insertManyNew<T extends { _id?: unknown }>(col: Collection<T>, docs: OptionalUnlessRequiredId<T>[]): Promise<number> {
  if (docs.length === 0) return 0;
  try {
    return (await col.insertMany(docs, { ordered: false })).insertedCount;
  } catch (error) {
    if (!isDuplicateKeyError(error)) throw error;
    return (error as { insertedCount?: number }).insertedCount ?? 0;
  }
}

/**
 * Inserts the new documents in bulk and replaces the known ones (by `_id`). Upserts one by one
 * would cost a scan each on FerretDB 1.x (about 0.05 s per document at 10,000 documents).
 */
export async function upsertMany<T extends { _id: string }>(col: Collection<T>, docs: T[]): Promise<{ created: number; updated: number }> {
  if (docs.length === 0) return { created: 0, updated: 0 };
  const ids = docs.map((doc) => doc._id);
  const known = new Set((await col.find({ _id: { $in: ids } } as Filter<T>, { projection: { _id: 1 } }).toArray()).map((doc) => doc._id as string));
  const fresh = docs.filter((doc) => !known.has(doc._id));
  if (fresh.length > 0) await col.insertMany(fresh as OptionalUnlessRequiredId<T>[], { ordered: true });
  const replacements = docs
    .filter((doc) => known.has(doc._id))
    .map((doc): AnyBulkWriteOperation<T> => ({ replaceOne: { filter: { _id: doc._id } as Filter<T>, replacement: doc } }));
  const result = replacements.length > 0 ? await col.bulkWrite(replacements, { ordered: true }) : { matchedCount: 0 };
  return { created: fresh.length, updated: result.matchedCount };
}

/**
 * Maps user-keyed objects (labels, annotations, headers, variables) to `{k, v}` pairs, because
 * FerretDB 1.x refuses keys containing `.` or starting with `$`.
 */
export function encodeMap(map: Record<string, string> | undefined | null): { k: string; v: string }[] {
  return Object.entries(map ?? {}).map(([k, v]) => ({ k, v }));
}

export function decodeMap(pairs: { k: string; v: string }[] | undefined | null): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of pairs ?? []) out[pair.k] = pair.v;
  return out;
}
