/**
 * An HTTP node's output key read in its response: `a.b` and `list[0].c` name nested values, as
 * the keys of the response flattened to paths would (object keys joined by `.`, array items as
 * `[i]`, every intermediate value named too). Walked, not flattened: a flattened response holds
 * every key's whole path, which for a deep answer with long keys is depth² × key length (a 5 MB
 * answer was gigabytes). Only own properties count (`constructor` is no output of `{}`).
 */
export function valueAtPath(value: unknown, path: string): { found: boolean; value?: unknown } {
  if (!path) return { found: false };
  return walk(value, path);
}

const ARRAY_INDEX = /^\[(\d+)\]/;

function walk(value: unknown, rest: string): { found: boolean; value?: unknown } {
  if (Array.isArray(value)) {
    const match = ARRAY_INDEX.exec(rest);
    if (!match) return { found: false };
    const index = Number(match[1]);
    if (index >= value.length || String(index) !== match[1]) return { found: false };
    return follow(value[index], rest.slice(match[0].length));
  }
  if (typeof value !== 'object' || value === null) return { found: false };
  // Keys may hold dots themselves: every key the path can start with is tried, the last that
  // leads to a value winning (as the later key of a flattening would overwrite the earlier).
  let result: { found: boolean; value?: unknown } = { found: false };
  for (const key of Object.keys(value)) {
    if (!rest.startsWith(key)) continue;
    const after = rest.slice(key.length);
    if (after !== '' && after[0] !== '.' && after[0] !== '[') continue;
    const found = follow((value as Record<string, unknown>)[key], after);
    if (found.found) result = found;
  }
  return result;
}

/** What is left of a path after a step: nothing (this value), `.key…` or `[i]…`. */
function follow(value: unknown, after: string): { found: boolean; value?: unknown } {
  if (after === '') return { found: true, value };
  if (after[0] === '.') return Array.isArray(value) ? { found: false } : walk(value, after.slice(1));
  return Array.isArray(value) ? walk(value, after) : { found: false };
}
