/**
 * Reversible encoding of free-form values (node responses, variables, interactive payloads)
 * for FerretDB 1.x, which refuses keys containing `.` or starting with `$` and arrays nested
 * directly in arrays, and for both engines' document depth (MongoDB refuses more than 100
 * levels): what lies deeper than STORED_DEPTH levels of the encoding is kept as JSON text. A
 * deep HTTP answer in a node response made the whole turn's save fail. Plain documents pass
 * through unchanged.
 */
const MAP_MARK = '__kv';
const ARRAY_MARK = '__arr';
const JSON_MARK = '__json';
/** Levels of encoding kept as documents: the rest of the 100 is left to what holds the value (a chat item's fields). */
export const STORED_DEPTH = 48;

const MARKS = new Set([MAP_MARK, ARRAY_MARK, JSON_MARK]);
const unsafeKey = (key: string) => key.includes('.') || key.startsWith('$') || MARKS.has(key);

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date) && value.constructor?.name !== 'ObjectId';
}

export function encodeForStorage(value: unknown, insideArray = false, depth = 0): unknown {
  if ((Array.isArray(value) || isPlainObject(value)) && depth >= STORED_DEPTH) return { [JSON_MARK]: JSON.stringify(value) };
  if (Array.isArray(value)) {
    // Wrapped, an array inside an array takes two levels.
    const inner = insideArray ? depth + 2 : depth + 1;
    const items = value.map((item) => encodeForStorage(item, true, inner));
    return insideArray ? { [ARRAY_MARK]: items } : items;
  }
  if (!isPlainObject(value)) return value;
  const entries = Object.entries(value).filter(([, v]) => v !== undefined);
  if (entries.some(([key]) => unsafeKey(key))) {
    return { [MAP_MARK]: entries.map(([k, v]) => ({ k, v: encodeForStorage(v, false, depth + 3) })) };
  }
  return Object.fromEntries(entries.map(([k, v]) => [k, encodeForStorage(v, false, depth + 1)]));
}

export function decodeFromStorage(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(decodeFromStorage);
  if (!isPlainObject(value)) return value;
  const keys = Object.keys(value);
  if (keys.length === 1 && keys[0] === ARRAY_MARK && Array.isArray(value[ARRAY_MARK])) return (value[ARRAY_MARK] as unknown[]).map(decodeFromStorage);
  if (keys.length === 1 && keys[0] === JSON_MARK && typeof value[JSON_MARK] === 'string') {
    try {
      return JSON.parse(value[JSON_MARK]);
    } catch {
      // A value of that one key stored before the mark existed (it was not encoded then).
      return value;
    }
  }
  if (keys.length === 1 && keys[0] === MAP_MARK && Array.isArray(value[MAP_MARK])) {
    return Object.fromEntries((value[MAP_MARK] as { k: string; v: unknown }[]).map(({ k, v }) => [k, decodeFromStorage(v)]));
  }
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, decodeFromStorage(v)]));
}
