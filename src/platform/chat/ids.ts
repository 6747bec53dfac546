import { randomInt } from 'node:crypto';

const LOWER = 'abcdefghijklmnopqrstuvwxyz';
const ALNUM = `${LOWER}ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789`;

/** The reference's getNanoid: a lowercase letter, then n−1 characters of [a-zA-Z0-9]. */
export function nanoid(size = 12): string {
  let out = LOWER[randomInt(LOWER.length)]!;
  for (let i = 1; i < size; i += 1) out += ALNUM[randomInt(ALNUM.length)]!;
  return out;
}

/** A share id: 24 characters of [a-z0-9]. */
export function shareIdToken(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  let out = '';
  for (let i = 0; i < 24; i += 1) out += alphabet[randomInt(alphabet.length)]!;
  return out;
}
