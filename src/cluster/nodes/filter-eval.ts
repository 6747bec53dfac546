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

type Test = (value: unknown) => boolean;

/** Whether the value, or any element of an array value, is in `wanted` (compared with ===). */
function inSet(wanted: unknown[]): Test {
  // A Set finds values as === does, except NaN, which === never matches: left out.
  const set = new Set(wanted.filter((value) => !Number.isNaN(value as number)));
  return (value) => elementsOf(value).some((element) => set.has(element));
}

function compileCondition(condition: unknown): Test {
  if (typeof condition !== 'object' || condition === null || Array.isArray(condition)) return (value) => equalsAny(value, condition);
  const tests = Object.entries(condition as Doc).map(([operator, operand]): Test => {
    switch (operator) {
      case '$in':
        return inSet(operand as unknown[]);
      case '$nin': {
        const found = inSet(operand as unknown[]);
        return (value) => !found(value);
      }
      case '$ne':
        return (value) => !equalsAny(value, operand);
      case '$regex': {
        let pattern: RegExp;
        try {
          pattern = new RegExp(operand as string);
        } catch (error) {
          return () => {
            throw error;
          };
        }
        return (value) => elementsOf(value).some((element) => typeof element === 'string' && pattern.test(element));
      }
      default:
        return () => {
          throw new Error(`operator ${operator} is not supported in process`);
        };
    }
  });
  return (value) => tests.every((test) => test(value));
}

/**
 * A filter as a test of documents, its work done once (sets for `$in`/`$nin`, each `$regex`
 * compiled), for evaluating one filter over many documents: a per-document evaluation compared
 * every name of a `names=` of 1,000 nodes with every node.
 */
export function compileFilter(filter: MongoFilter): (doc: Doc) => boolean {
  const clauses = Object.entries(filter).map(([field, condition]): ((doc: Doc) => boolean) => {
    if (field === '$and') {
      const parts = (condition as MongoFilter[]).map(compileFilter);
      return (doc) => parts.every((part) => part(doc));
    }
    const test = compileCondition(condition);
    return (doc) => test(doc[field]);
  });
  return (doc) => clauses.every((clause) => clause(doc));
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
