import { ObjectId } from 'mongodb';

/**
 * The codec at the repository boundary: stored documents keep their ObjectIds, and what a
 * repository returns has hex strings in their place (no ObjectId leaves a repository).
 */
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
/** A fresh id, for a record whose id is needed before it is written. */
export const newId = (): string => new ObjectId().toHexString();

/** `plain` of a look-up that may have found nothing. */
export const plainOrNull = <T>(doc: T | null): Plain<T> | null => (doc === null ? null : plain(doc));
