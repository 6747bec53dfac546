/**
 * A deep copy of JSON-like data (plain objects, arrays, primitives, Dates), for the workflow
 * graphs a chat turn runs: they come from the shared, frozen app cache and the run writes into
 * them. About twenty times faster than `structuredClone` on such data, which matters once per
 * turn and per nested run. Anything else (Map, Buffer, class instances) goes to `structuredClone`.
 */
export function deepClone<T>(value: T): T {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(deepClone) as T;
  const prototype = Object.getPrototypeOf(value);
  if (prototype === Object.prototype || prototype === null) {
    const copy: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(value)) copy[key] = deepClone(child);
    return copy as T;
  }
  if (value instanceof Date) return new Date(value.getTime()) as T;
  return structuredClone(value);
}
