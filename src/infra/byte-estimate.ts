/** What a value costs besides its text: object headers, slots, numbers (V8 on 64 bits, roughly). */
const OBJECT_BYTES = 32;
const SLOT_BYTES = 8;
const STRING_HEADER_BYTES = 16;
/** A character V8 cannot store in a one-byte string: such a string takes two bytes per character. */
const TWO_BYTE_CHAR = /[\u0100-\uffff]/;

/** A string's character bytes: one or two per UTF-16 unit, as V8 stores it (found by one native scan). */
function textBytes(text: string): number {
  return (TWO_BYTE_CHAR.test(text) ? 2 : 1) * text.length;
}

/**
 * Roughly the heap bytes of a value decoded from JSON or read from the database (plain objects,
 * arrays, strings, numbers, dates, buffers): each string's bytes (two per character when it holds
 * one past U+00FF: CJK text weighs twice its length) plus a fixed cost per object, property and
 * element. Caches weigh what they store with it, once, when they store it: a walk as long as the
 * value. Proportion, not exactness, is the point; iterative, so no nesting depth can overflow
 * the stack.
 */
export function estimateBytes(value: unknown): number {
  let bytes = 0;
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const next = pending.pop();
    if (typeof next === 'string') bytes += STRING_HEADER_BYTES + textBytes(next);
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
        bytes += SLOT_BYTES + textBytes(key);
        pending.push((next as Record<string, unknown>)[key]);
      }
    }
  }
  return bytes;
}

/** A mebibyte, for budgets written in bytes. */
export const MiB = 1024 * 1024;
