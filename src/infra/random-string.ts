/**
 * Random strings over an alphabet from the CSPRNG (ids, share tokens, API keys), drawn from a
 * pool of random bytes: crypto.randomInt per character cost a microsecond per id on the chat
 * path. Each character takes one byte masked to the alphabet's next power of two, and bytes
 * that fall outside the alphabet are drawn again, so every character is uniform.
 */
import { randomFillSync } from 'node:crypto';

const POOL_BYTES = 4096;
const pool = Buffer.alloc(POOL_BYTES);
let next = POOL_BYTES;

function randomByte(): number {
  if (next === POOL_BYTES) {
    randomFillSync(pool);
    next = 0;
  }
  return pool[next++]!;
}

function maskFor(bound: number): number {
  if (!Number.isInteger(bound) || bound < 1 || bound > 256) throw new RangeError(`bound must be an integer from 1 to 256, got ${bound}`);
  // bound − 1 with every bit below its highest set: the next power of two, less one.
  let mask = bound - 1;
  mask |= mask >> 1;
  mask |= mask >> 2;
  mask |= mask >> 4;
  return mask;
}

function draw(bound: number, mask: number): number {
  for (;;) {
    const value = randomByte() & mask;
    if (value < bound) return value;
  }
}

/** An integer in [0, bound), uniform (bound from 1 to 256). */
export function randomBelow(bound: number): number {
  return draw(bound, maskFor(bound));
}

/** `length` characters of `alphabet` (at most 256 characters), each uniform and independent. */
export function randomString(alphabet: string, length: number): string {
  const mask = maskFor(alphabet.length);
  let out = '';
  for (let i = 0; i < length; i += 1) out += alphabet[draw(alphabet.length, mask)]!;
  return out;
}

export const LOWERCASE = 'abcdefghijklmnopqrstuvwxyz';
export const ALPHANUMERIC = `${LOWERCASE}ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789`;

/** The reference's getNanoid: a lowercase letter, then n−1 characters of [a-zA-Z0-9]. */
export function nanoid(size = 12): string {
  return randomString(LOWERCASE, 1) + randomString(ALPHANUMERIC, size - 1);
}
