import type { FastifyInstance } from 'fastify';

/** Collections that change on any authenticated request or by time alone, not by the request's effect. */
const IGNORED_COLLECTIONS = new Set(['user_sessions', 'resource_tree_locks']);
/** Derived storage written in the background (search index snapshots after earlier writes). */
const IGNORED_PREFIXES = ['dataset_index_'];
/** Fields that record use, not state (an API key's last use, a login time). */
const VOLATILE_FIELDS = new Set(['lastUsedTime', 'lastLoginTime']);

export type Snapshot = Map<string, Map<string, string>>;

const canonical = (doc: Record<string, unknown>) =>
  JSON.stringify(doc, (key, value) => (VOLATILE_FIELDS.has(key) ? undefined : value));

/**
 * Every document of every collection (minus the ignored ones), keyed by collection and _id. The
 * usage records earlier answers left to be written behind them are settled first: they belong to
 * those requests, not to the next one.
 */
export async function snapshot(app: FastifyInstance): Promise<Snapshot> {
  await app.identity.usage.drain();
  const db = app.mongo.db;
  const names = (await db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name).filter((n) => !IGNORED_COLLECTIONS.has(n) && !IGNORED_PREFIXES.some((prefix) => n.startsWith(prefix)) && !n.startsWith('system.'));
  const entries = await Promise.all(
    names.map(async (name) => {
      const docs = await db.collection(name).find().toArray();
      return [name, new Map(docs.map((doc) => [String(doc._id), canonical(doc)]))] as const;
    }),
  );
  return new Map(entries);
}

/** What changed between two snapshots, one line per document (empty when nothing did). */
export function diffSnapshots(before: Snapshot, after: Snapshot): string[] {
  const changes: string[] = [];
  for (const name of new Set([...before.keys(), ...after.keys()])) {
    const a = before.get(name) ?? new Map<string, string>();
    const b = after.get(name) ?? new Map<string, string>();
    for (const [id, doc] of b) {
      if (!a.has(id)) changes.push(`${name}: inserted ${doc.slice(0, 200)}`);
      else if (a.get(id) !== doc) changes.push(`${name}: changed ${id}: ${a.get(id)!.slice(0, 150)} → ${doc.slice(0, 150)}`);
    }
    for (const id of a.keys()) if (!b.has(id)) changes.push(`${name}: deleted ${a.get(id)!.slice(0, 200)}`);
  }
  return changes;
}
