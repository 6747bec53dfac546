/**
 * Reversible encoding of free-form values (node responses, variables, interactive payloads)
 * for FerretDB 1.x, which refuses keys containing `.` or starting with `$` and arrays nested
 * directly in arrays. Plain documents pass through unchanged.
 */
const MAP_MARK = '__kv';
const ARRAY_MARK = '__arr';

const unsafeKey = (key: string) => key.includes('.') || key.startsWith('$') || key === MAP_MARK || key === ARRAY_MARK;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date) && value.constructor?.name !== 'ObjectId';
}

export function encodeForStorage(value: unknown, insideArray = false): unknown {
  if (Array.isArray(value)) {
    const items = value.map((item) => encodeForStorage(item, true));
    return insideArray ? { [ARRAY_MARK]: items } : items;
  }
  if (!isPlainObject(value)) return value;
  const entries = Object.entries(value).filter(([, v]) => v !== undefined);
  if (entries.some(([key]) => unsafeKey(key))) {
    return { [MAP_MARK]: entries.map(([k, v]) => ({ k, v: encodeForStorage(v) })) };
  }
  return Object.fromEntries(entries.map(([k, v]) => [k, encodeForStorage(v)]));
}

export function decodeFromStorage(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(decodeFromStorage);
  if (!isPlainObject(value)) return value;
  const keys = Object.keys(value);
  if (keys.length === 1 && keys[0] === ARRAY_MARK && Array.isArray(value[ARRAY_MARK])) return (value[ARRAY_MARK] as unknown[]).map(decodeFromStorage);
  if (keys.length === 1 && keys[0] === MAP_MARK && Array.isArray(value[MAP_MARK])) {
    return Object.fromEntries((value[MAP_MARK] as { k: string; v: unknown }[]).map(({ k, v }) => [k, decodeFromStorage(v)]));
  }
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, decodeFromStorage(v)]));
}
