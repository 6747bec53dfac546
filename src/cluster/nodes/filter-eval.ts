import type { MongoFilter } from './node-query.js';

/**
 * Evaluates, in process, the small subset of MongoDB query operators that `planNodeList`
 * produces (`$and`, equality, `$in`, `$nin`, `$ne`, `$regex`; array fields match when any
 * element does), and its sort specs. Used by the cached node index (see node-index.ts) so the
 * same plan runs either in the database or over the compact cached entries.
 */
type Doc = Record<string, unknown>;

function elementsOf(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [value];
}

function equalsAny(value: unknown, wanted: unknown): boolean {
  return elementsOf(value).some((element) => element === wanted);
}

function matchesCondition(value: unknown, condition: unknown): boolean {
  if (typeof condition !== 'object' || condition === null || Array.isArray(condition)) return equalsAny(value, condition);
  return Object.entries(condition as Doc).every(([operator, operand]) => {
    switch (operator) {
      case '$in':
        return (operand as unknown[]).some((wanted) => equalsAny(value, wanted));
      case '$nin':
        return !(operand as unknown[]).some((wanted) => equalsAny(value, wanted));
      case '$ne':
        return !equalsAny(value, operand);
      case '$regex': {
        const pattern = new RegExp(operand as string);
        return elementsOf(value).some((element) => typeof element === 'string' && pattern.test(element));
      }
      default:
        throw new Error(`operator ${operator} is not supported in process`);
    }
  });
}

export function matchesFilter(filter: MongoFilter, doc: Doc): boolean {
  return Object.entries(filter).every(([field, condition]) =>
    field === '$and' ? (condition as MongoFilter[]).every((clause) => matchesFilter(clause, doc)) : matchesCondition(doc[field], condition),
  );
}

/** A comparator for a sort spec over string, number or Date fields. */
export function sortComparator(sort: Record<string, 1 | -1>): (a: Doc, b: Doc) => number {
  const keys = Object.entries(sort);
  return (a, b) => {
    for (const [field, direction] of keys) {
      const left = a[field] instanceof Date ? (a[field] as Date).getTime() : (a[field] as string | number);
      const right = b[field] instanceof Date ? (b[field] as Date).getTime() : (b[field] as string | number);
      if (left < right) return -direction;
      if (left > right) return direction;
    }
    return 0;
  };
}
