import type { FastifyInstance } from 'fastify';
import type { CommandFailedEvent, CommandStartedEvent, CommandSucceededEvent } from 'mongodb';

/** Collections that change on any authenticated request or by time alone, not by the request's effect. */
const IGNORED_COLLECTIONS = new Set(['user_sessions', 'resource_tree_locks']);
/** Derived storage written in the background (search index snapshots after earlier writes). */
const IGNORED_PREFIXES = ['dataset_index_'];
/** Fields that record use, not state (an API key's last use, a login time). */
const VOLATILE_FIELDS = new Set(['lastUsedTime', 'lastLoginTime']);

export type Snapshot = Map<string, Map<string, string>>;

const canonical = (doc: Record<string, unknown>) =>
  JSON.stringify(doc, (key, value) => (VOLATILE_FIELDS.has(key) ? undefined : value));

/** Commands that read or manage the connection: everything else may change a collection. */
const NON_WRITING = new Set([
  'find', 'getMore', 'count', 'distinct', 'listCollections', 'listIndexes', 'collStats', 'dbStats', 'explain',
  'hello', 'ismaster', 'isMaster', 'ping', 'endSessions', 'saslStart', 'saslContinue', 'killCursors', 'buildInfo', 'getParameter',
]);

const kept = (name: string) => !IGNORED_COLLECTIONS.has(name) && !IGNORED_PREFIXES.some((prefix) => name.startsWith(prefix)) && !name.startsWith('system.');

async function readCollection(app: FastifyInstance, name: string): Promise<Map<string, string>> {
  const docs = await app.mongo.db.collection(name).find().toArray();
  return new Map(docs.map((doc) => [String(doc._id), canonical(doc)]));
}

/**
 * Every document of every collection (minus the ignored ones), keyed by collection and _id. The
 * usage records earlier answers left to be written behind them are settled first: they belong to
 * those requests, not to the next one.
 */
export async function snapshot(app: FastifyInstance): Promise<Snapshot> {
  await app.identity.usage.drain();
  const names = (await app.mongo.db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name).filter(kept);
  return new Map(await Promise.all(names.map(async (name) => [name, await readCollection(app, name)] as const)));
}

export interface SnapshotTracker {
  /** The same as `snapshot(app)`, reading again only the collections the app wrote to since the last take. */
  take(): Promise<Snapshot>;
  stop(): void;
}

/**
 * Snapshots of one app's database for tests that take hundreds (each full snapshot is a find per
 * collection, a table scan each on FerretDB). The app's client reports every command it sends; a
 * collection is read again once a command that may write it started or finished since it was
 * last read (finished too: a write sent before a read and applied after it). Only the app's own
 * writes are seen: a test writing through another client must take full snapshots.
 */
export function snapshotTracker(app: FastifyInstance): SnapshotTracker {
  const client = app.mongo.client;
  if (!client.options.monitorCommands) throw new Error('the test database URI must carry monitorCommands=true (freshDatabaseUri does)');
  const database = app.mongo.db.databaseName;
  const dirty = new Set<string>();
  let everything = true;
  const pending = new Map<number, string | null>();
  const mark = (target: string | null) => {
    if (target === null) everything = true;
    else dirty.add(target);
  };
  const started = (event: CommandStartedEvent) => {
    if (event.databaseName !== database || NON_WRITING.has(event.commandName)) return;
    const target = event.command[event.commandName];
    const collection = typeof target === 'string' ? target : null;
    pending.set(event.requestId, collection);
    mark(collection);
  };
  const ended = (event: CommandSucceededEvent | CommandFailedEvent) => {
    if (!pending.has(event.requestId)) return;
    mark(pending.get(event.requestId) ?? null);
    pending.delete(event.requestId);
  };
  client.on('commandStarted', started);
  client.on('commandSucceeded', ended);
  client.on('commandFailed', ended);
  let last: Snapshot = new Map();
  return {
    async take() {
      await app.identity.usage.drain();
      const names = (await app.mongo.db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name).filter(kept);
      const stale = names.filter((name) => everything || dirty.has(name) || !last.has(name));
      everything = false;
      for (const name of stale) dirty.delete(name);
      const fresh = new Map(await Promise.all(stale.map(async (name) => [name, await readCollection(app, name)] as const)));
      last = new Map(names.map((name) => [name, fresh.get(name) ?? (last.get(name) as Map<string, string>)]));
      return last;
    },
    stop() {
      client.off('commandStarted', started);
      client.off('commandSucceeded', ended);
      client.off('commandFailed', ended);
    },
  };
}

/** What changed between two snapshots, one line per document (empty when nothing did). */
export function diffSnapshots(before: Snapshot, after: Snapshot): string[] {
  const changes: string[] = [];
  for (const name of new Set([...before.keys(), ...after.keys()])) {
    const a = before.get(name) ?? new Map<string, string>();
    const b = after.get(name) ?? new Map<string, string>();
    if (a === b) continue;
    for (const [id, doc] of b) {
      if (!a.has(id)) changes.push(`${name}: inserted ${doc.slice(0, 200)}`);
      else if (a.get(id) !== doc) changes.push(`${name}: changed ${id}: ${a.get(id)!.slice(0, 150)} → ${doc.slice(0, 150)}`);
    }
    for (const id of a.keys()) if (!b.has(id)) changes.push(`${name}: deleted ${a.get(id)!.slice(0, 200)}`);
  }
  return changes;
}
