import {
  type AnyBulkWriteOperation,
  type BulkWriteOptions,
  type Collection,
  type CreateIndexesOptions,
  type Db,
  type Document,
  type Filter,
  type IndexSpecification,
  MongoClient,
  type MongoClientOptions,
  ObjectId,
  type OptionalUnlessRequiredId,
  type WithId,
} from 'mongodb';
import { ConfigError } from '../config.js';
import { describeError } from './database-errors.js';
import { Errors } from './errors.js';
import { installClosedWriteFix } from './mongo-closed-write.js';

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

/**
 * Fail fast when the database is unreachable: a request answers 503 within about a second
 * instead of waiting the driver's 30 s. Server selection is instant while the server is known
 * up, and connectTimeoutMS bounds a silent peer during each step of opening a connection (not a
 * running query), so normal operation does not feel them. socketTimeoutMS bounds a command a
 * server took and never answers (a stalled server that still answers its heartbeats, such as a
 * FerretDB whose pool deadlocked): a 503 after two minutes instead of a request held for good;
 * no single command of ours runs near that long. Options in the URI win.
 */
const FAIL_FAST_OPTIONS = { serverSelectionTimeoutMS: 1000, connectTimeoutMS: 1000, socketTimeoutMS: 120_000 } as const;

function uriOptionNames(uri: string): Set<string> {
  const query = uri.split('?')[1] ?? '';
  return new Set(
    query
      .split('&')
      .map((pair) => pair.split('=')[0]?.toLowerCase() ?? '')
      .filter(Boolean),
  );
}

/** Client options: the fail-fast defaults, minus any the URI sets itself. */
export function mongoClientOptions(uri: string): MongoClientOptions {
  const inUri = uriOptionNames(uri);
  const defaults = Object.entries(FAIL_FAST_OPTIONS).filter(([name]) => !inUri.has(name.toLowerCase()));
  return { ...Object.fromEntries(defaults), ignoreUndefined: true };
}

/** Creates the client; it connects on first use (or explicitly via `client.connect()`). `overrides` win over the URI. */
export function createMongo(uri: string, overrides: MongoClientOptions = {}): Mongo {
  installClosedWriteFix();
  let client: MongoClient;
  try {
    client = new MongoClient(uri, { ...mongoClientOptions(uri), ...overrides });
  } catch (error) {
    // The driver's own parse (ports, options) goes past config.ts's check; its message names no
    // variable. The URI is not repeated: it may hold a password.
    throw new ConfigError(`Invalid configuration:\n  MONGODB_URI: ${(error as Error).message}`);
  }
  // Database name comes from the URI path; `platform` when the URI names none.
  const db = client.db(new URL(uri.replace(/^mongodb(\+srv)?:/, 'http:')).pathname.slice(1) || 'platform');
  return { client, db };
}

/** MongoDB's answer to an index whose key (85) or name (86) an existing index has with other options. */
const INDEX_CONFLICT_CODES = new Set([85, 86]);

/**
 * Builds the declared indexes. A FastGPT database reused as it is holds indexes of the same key
 * with other options (its TTL indexes on `usages.time`, `images.expiredTime`,
 * `buffer_tts.createTime`): MongoDB refuses ours next to them, and that one serves the same
 * reads, so a plain range index of ours is left to it, with a warning. A unique index is never
 * left to another: uniqueness is what the code relies on.
 */
export async function ensureIndexes(db: Db, declarations: readonly IndexDeclaration[], log?: { warn(message: string): void }): Promise<void> {
  for (const declaration of declarations) {
    try {
      await db.collection(declaration.collection).createIndex(declaration.key, declaration.options ?? {});
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (typeof code !== 'number' || !INDEX_CONFLICT_CODES.has(code) || declaration.options?.unique) throw error;
      log?.warn(`the index ${declaration.collection}.${indexName(declaration)} exists with other options (a reused FastGPT database?); it is left as it is and serves the same reads: ${describeError(error)}`);
    }
  }
}

/** The key pattern as ordered field/direction pairs, read as the driver reads every form of `IndexSpecification`. */
function indexKeyEntries(key: IndexSpecification): [string, unknown][] {
  const isDirection = (value: unknown) => typeof value === 'number' || ['2d', '2dsphere', 'text', 'geoHaystack'].includes(value as string);
  const single = !Array.isArray(key) || (key.length === 2 && isDirection(key[1]));
  const entries: [string, unknown][] = [];
  for (const spec of (single ? [key] : key) as unknown[]) {
    if (typeof spec === 'string') entries.push([spec, 1]);
    else if (Array.isArray(spec)) entries.push([String(spec[0]), spec[1] ?? 1]);
    else if (spec instanceof Map) entries.push(...(spec as Map<string, unknown>).entries());
    else if (typeof spec === 'object' && spec !== null) entries.push(...Object.entries(spec));
  }
  return entries;
}

/** The index's name: the one declared, else the server's default from the key pattern (`appId_1_time_-1`). */
export function indexName(declaration: IndexDeclaration): string {
  return declaration.options?.name ?? indexKeyEntries(declaration.key).flat().join('_');
}

/** Codes `dropRetiredIndexes` takes for "nothing to drop": no such index, no such collection. */
const INDEX_NOT_FOUND = 27;
const NAMESPACE_NOT_FOUND = 26;

export interface RetiredIndexes {
  /** Indexes earlier versions created that no query needs any more (`RETIRED_*_INDEXES`). */
  retired: readonly IndexDeclaration[];
  /** The indexes declared now: never dropped, even when listed as retired too. */
  current: readonly IndexDeclaration[];
}

/**
 * Drops the retired indexes, by name (a retired index costs every write and serves no read), once
 * their successors are built: call it after `ensureIndexes` of the current ones. One that is gone
 * already, or whose collection does not exist, is skipped. Any other failure is logged as a
 * warning and the rest go on: a retired index is harmless, so start-up does not stop for it (the
 * next start-up tries again). An index of the same name or key pattern as a current one of its
 * collection is never dropped. Answers the names dropped, as `collection.name`.
 */
export async function dropRetiredIndexes(db: Db, declarations: RetiredIndexes, log: { info(message: string): void; warn(message: string): void }): Promise<string[]> {
  const keyOf = (declaration: IndexDeclaration) => JSON.stringify(indexKeyEntries(declaration.key));
  const isCurrent = (retired: IndexDeclaration) =>
    declarations.current.some(
      (current) => current.collection === retired.collection && (indexName(current) === indexName(retired) || keyOf(current) === keyOf(retired)),
    );
  const dropped: string[] = [];
  for (const declaration of declarations.retired) {
    if (isCurrent(declaration)) continue;
    const name = indexName(declaration);
    try {
      await db.collection(declaration.collection).dropIndex(name);
      dropped.push(`${declaration.collection}.${name}`);
      log.info(`dropped the retired index ${declaration.collection}.${name}`);
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (code === INDEX_NOT_FOUND || code === NAMESPACE_NOT_FOUND) continue;
      log.warn(`could not drop the retired index ${declaration.collection}.${name} (left in place; start-up goes on): ${describeError(error)}`);
    }
  }
  return dropped;
}

export function isObjectIdHex(value: unknown): value is string {
  return typeof value === 'string' && /^[0-9a-fA-F]{24}$/.test(value);
}

/** The id, if it is 24 hex characters; else a 400 naming the field (a malformed id never reaches a query). */
export function requireHexId(value: unknown, field: string): string {
  if (!isObjectIdHex(value)) throw Errors.missingParams(`Invalid field '${field}': expected a 24-character hex id`);
  return value;
}

/** Escapes user text for use inside a $regex. */
export function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The server's error code for a unique-index violation. */
export const DUPLICATE_KEY_CODE = 11000;

/**
 * A duplicate-key failure; for a bulk write, one where every failed write is a duplicate key.
 * FerretDB 1.24 reports a unique violation by an update as an internal error naming the
 * PostgreSQL constraint instead of 11000.
 */
export function isDuplicateKeyError(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const writeErrors = (error as { writeErrors?: { code?: number }[] | { code?: number } }).writeErrors;
  const list = Array.isArray(writeErrors) ? writeErrors : writeErrors ? [writeErrors] : [];
  if (list.length === 0) return (error as { code?: number }).code === DUPLICATE_KEY_CODE || /UNIQUE constraint/.test(String((error as Error).message));
  return list.every((entry) => entry.code === DUPLICATE_KEY_CODE);
}

/**
 * A unique index that cannot be built because stored documents already share a key: 11000 on
 * MongoDB, an internal error with PostgreSQL's unique-violation state on FerretDB.
 */
export function isUniqueIndexBuildFailure(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  return (error as { code?: number }).code === DUPLICATE_KEY_CODE || /SQLSTATE 23505/.test(String((error as Error).message));
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
 * Deletes what any of the filters match, in one command (a delete of several statements), and
 * returns how many went. For a set of values of one field, instead of a `$in`: FerretDB 1.24
 * passes an equality down to PostgreSQL (an index read) but filters an `$in` itself, after
 * reading every document the other conditions match (all of a team's vectors, say).
 */
export async function deleteEach<T extends Document>(col: Collection<T>, filters: Filter<T>[]): Promise<number> {
  if (filters.length === 0) return 0;
  const operations = filters.map((filter) => ({ deleteMany: { filter } })) as AnyBulkWriteOperation<T>[];
  return (await col.bulkWrite(operations, { ordered: false })).deletedCount;
}

/**
 * Update, replace and upsert statements per command of `bulkUpdate`. FerretDB 1.24 (both
 * backends) holds a connection of its pool of 50 per such statement until the command ends, so
 * one bulk of 50 of them, or concurrent bulks adding up to that, waits for ever and stalls every
 * other client (measured: 40 statements pass, 60 hang, two concurrent bulks of 30 hang). Deletes
 * and inserts are not affected.
 */
export const UPDATE_STATEMENTS_PER_COMMAND = 16;

/** Update commands of more than one statement, one at a time per process (see above). */
let updateCommands: Promise<unknown> = Promise.resolve();

/**
 * A bulk of update, replace and upsert statements, sent `UPDATE_STATEMENTS_PER_COMMAND` at a time
 * and one such command at a time per process. Ordered: stops at the first failing command.
 * Unordered: every command runs, then the first failure is thrown. On MongoDB a large bulk costs
 * a round trip per 16 statements instead of one: these are imports, permission changes over a
 * subtree and migrations, not request hot paths.
 */
export async function bulkUpdate<T extends Document>(
  col: Collection<T>,
  operations: AnyBulkWriteOperation<T>[],
  options: BulkWriteOptions = {},
): Promise<{ matchedCount: number; modifiedCount: number; upsertedCount: number }> {
  const totals = { matchedCount: 0, modifiedCount: 0, upsertedCount: 0 };
  let failure: unknown;
  for (let start = 0; start < operations.length; start += UPDATE_STATEMENTS_PER_COMMAND) {
    const batch = operations.slice(start, start + UPDATE_STATEMENTS_PER_COMMAND);
    const command = updateCommands.then(() => col.bulkWrite(batch, options));
    updateCommands = command.catch(() => undefined);
    try {
      const result = await command;
      totals.matchedCount += result.matchedCount;
      totals.modifiedCount += result.modifiedCount;
      totals.upsertedCount += result.upsertedCount;
    } catch (error) {
      if (options.ordered !== false) throw error;
      failure ??= error;
    }
  }
  if (failure !== undefined) throw failure;
  return totals;
}

/**
 * The documents of these ids (unknown ones left out), one `_id` read each, in parallel: for the
 * few ids of a request. FerretDB 1.24 reads the whole collection for an `_id` `$in`.
 */
export async function findEachById<T extends Document>(col: Collection<T>, ids: readonly ObjectId[], projection?: Document): Promise<WithId<T>[]> {
  const unique = [...new Map(ids.map((id) => [id.toHexString(), id])).values()];
  const found: (WithId<T> | null)[] = await Promise.all(unique.map((_id) => col.findOne({ _id } as Filter<T>, { projection })));
  return found.filter((doc) => doc !== null);
}

/** Up to this many values `findWithAnyOf` reads value by value; beyond, one `$in`. */
export const EQUALITY_READS_UP_TO = 16;

/**
 * The documents matching `scope` whose `field` is one of `values`. For a few values, one equality
 * read each, in parallel: FerretDB 1.24 passes an equality down (an index read) but filters an
 * `$in` itself after reading everything `scope` matches (all of a team's collections, say). For
 * more, one `$in` read: a scan of the scope there, cheaper than hundreds of reads, and index-served
 * on MongoDB either way.
 */
export async function findWithAnyOf<T extends Document>(col: Collection<T>, scope: Filter<T>, field: string, values: readonly unknown[], projection?: Document): Promise<WithId<T>[]> {
  if (values.length === 0) return [];
  if (values.length > EQUALITY_READS_UP_TO) return col.find({ ...scope, [field]: { $in: values } } as Filter<T>, { projection }).toArray();
  const reads = await Promise.all(values.map((value) => col.find({ ...scope, [field]: value } as Filter<T>, { projection }).toArray()));
  return reads.flat();
}

/** Which of the ids name a document of the collection (findEachById). */
export async function existingObjectIds<T extends { _id: ObjectId }>(col: Collection<T>, ids: string[]): Promise<Set<string>> {
  const found = await findEachById(col, ids.map((id) => new ObjectId(id)), { _id: 1 });
  return new Set(found.map((doc) => doc._id.toHexString()));
}

/** Where `runMigrationOnce` records the data migrations a deployment has finished. */
export const MIGRATIONS = 'migrations';

/**
 * Runs a data migration unless the deployment has finished it before: one `_id` read per start
 * afterwards, where the migration's own query might read a whole collection. `migrate` answers
 * whether it ran to the end; only then is it recorded, so one interrupted runs again. Migrations
 * must be idempotent (two replicas starting together may both run one). Answers whether the
 * migration is finished.
 */
export async function runMigrationOnce(db: Db, id: string, migrate: () => Promise<boolean>): Promise<boolean> {
  const done = db.collection<{ _id: string; doneAt: Date }>(MIGRATIONS);
  if (await done.findOne({ _id: id }, { projection: { _id: 1 } })) return true;
  if (!(await migrate())) return false;
  try {
    await done.updateOne({ _id: id }, { $setOnInsert: { doneAt: new Date() } }, { upsert: true });
  } catch (error) {
    // Two processes finishing together both upsert the record; the one refused finds it written.
    if (!isDuplicateKeyError(error)) throw error;
  }
  return true;
}

/** Documents written per round trip by upsertMany (and per progress report of an import). */
export const UPSERT_CHUNK = 1000;

/**
 * Writes documents keyed by `_id`, a chunk at a time: the new ones with one insertMany, the known
 * ones with one bulk of replaceOne (an upsert per document costs a scan each on FerretDB 1.x,
 * about 0.05 s per document at 10,000). `onWritten` hears the running total after each chunk.
 */
export async function upsertMany<T extends { _id: string }>(
  col: Collection<T>,
  docs: T[],
  onWritten?: (written: number) => void,
): Promise<{ created: number; updated: number }> {
  let created = 0;
  let updated = 0;
  for (let start = 0; start < docs.length; start += UPSERT_CHUNK) {
    const chunk = docs.slice(start, start + UPSERT_CHUNK);
    const known = new Set((await col.find({ _id: { $in: chunk.map((doc) => doc._id) } } as Filter<T>, { projection: { _id: 1 } }).toArray()).map((doc) => doc._id as string));
    const fresh = chunk.filter((doc) => !known.has(doc._id));
    if (fresh.length > 0) await col.insertMany(fresh as OptionalUnlessRequiredId<T>[], { ordered: true });
    const replacements = chunk
      .filter((doc) => known.has(doc._id))
      .map((doc): AnyBulkWriteOperation<T> => ({ replaceOne: { filter: { _id: doc._id } as Filter<T>, replacement: doc } }));
    if (replacements.length > 0) updated += (await bulkUpdate(col, replacements, { ordered: true })).matchedCount;
    created += fresh.length;
    onWritten?.(start + chunk.length);
  }
  return { created, updated };
}

/**
 * Maps user-keyed objects (labels, annotations, headers, variables) to `{k, v}` pairs, because
 * FerretDB 1.x refuses keys containing `.` or starting with `$`.
 */
export function encodeMap(map: Record<string, string> | undefined | null): { k: string; v: string }[] {
  return Object.entries(map ?? {}).map(([k, v]) => ({ k, v }));
}
