/** What a value costs besides its text: object headers, slots, numbers (V8 on 64 bits, roughly). */
const OBJECT_BYTES = 32;
const SLOT_BYTES = 8;
const STRING_HEADER_BYTES = 16;

/**
 * Roughly the heap bytes of a value decoded from JSON or read from the database (plain objects,
 * arrays, strings, numbers, dates, buffers): each string's length plus a fixed cost per object,
 * property and element. Caches weigh what they store with it, once, when they store it: a walk
 * as long as the value (a string counts by its length, not its characters). Proportion, not
 * exactness, is the point; iterative, so no nesting depth can overflow the stack.
 */
export function estimateBytes(value: unknown): number {
  let bytes = 0;
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const next = pending.pop();
    if (typeof next === 'string') bytes += STRING_HEADER_BYTES + next.length;
    else if (next === null || typeof next !== 'object') bytes += SLOT_BYTES;
    else if (next instanceof Date) bytes += OBJECT_BYTES;
    else if (ArrayBuffer.isView(next)) bytes += OBJECT_BYTES + next.byteLength;
    else if (Array.isArray(next)) {
      bytes += OBJECT_BYTES;
      for (const item of next) pending.push(item);
    } else {
      bytes += OBJECT_BYTES;
      for (const key in next) {
        if (!Object.hasOwn(next, key)) continue;
        bytes += SLOT_BYTES + key.length;
        pending.push((next as Record<string, unknown>)[key]);
      }
    }
  }
  return bytes;
}

/** A mebibyte, for budgets written in bytes. */
export const MiB = 1024 * 1024;
