import type { Collection, Document, ObjectId } from 'mongodb';
import { oid, oids } from '../../infra/plain-record.js';

export { oid, oids, type Plain, plain } from '../../infra/plain-record.js';

/** Keeps the first item of each key, in order. */
export function uniqueBy<T>(items: readonly T[], key: (item: T) => string): T[] {
  const seen = new Set<string>();
  const out: T[] = [];
  for (const item of items) {
    const k = key(item);
    if (seen.has(k)) continue;
    seen.add(k);
    out.push(item);
  }
  return out;
}

/** Counts a team's documents per collection (`$group` with `$sum`, which FerretDB supports). */
export async function countPerCollection<T extends Document>(col: Collection<T>, teamId: string, collectionIds: string[]): Promise<Map<string, number>> {
  const rows = await col
    .aggregate<{ _id: ObjectId; n: number }>([
      { $match: { teamId: oid(teamId), collectionId: { $in: oids(collectionIds) } } },
      { $group: { _id: '$collectionId', n: { $sum: 1 } } },
    ])
    .toArray();
  return new Map(rows.map((row) => [row._id.toHexString(), row.n]));
}
