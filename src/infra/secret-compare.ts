import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Compares a secret a client sent with the one we hold in constant time. Both sides are hashed
 * first, so neither the content nor the length of the expected secret leaks through timing.
 */
export function sameSecret(given: string, expected: string): boolean {
  const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();
  return timingSafeEqual(digest(given), digest(expected));
}
