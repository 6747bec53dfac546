import { type Collection, type Document, ObjectId } from 'mongodb';

/** Stored documents with ObjectIds turned into hex strings (repositories return plain objects). */
export type Plain<T> = T extends ObjectId
  ? string
  : T extends Date
    ? Date
    : T extends Buffer
      ? Buffer
      : T extends (infer U)[]
        ? Plain<U>[]
        : T extends object
          ? { [K in keyof T]: Plain<T[K]> }
          : T;

export function plain<T>(value: T): Plain<T> {
  if (value instanceof ObjectId) return value.toHexString() as Plain<T>;
  if (value instanceof Date || Buffer.isBuffer(value) || value === null || typeof value !== 'object') return value as Plain<T>;
  if (Array.isArray(value)) return value.map((item) => plain(item)) as Plain<T>;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) out[key] = plain(item);
  return out as Plain<T>;
}

export const oid = (id: string | ObjectId): ObjectId => (id instanceof ObjectId ? id : new ObjectId(id));
export const oids = (ids: readonly (string | ObjectId)[]): ObjectId[] => ids.map(oid);

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
