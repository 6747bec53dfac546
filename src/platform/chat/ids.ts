import { ALPHANUMERIC, LOWERCASE, randomString } from '../../infra/random-string.js';

/** The reference's getNanoid: a lowercase letter, then n−1 characters of [a-zA-Z0-9]. */
export function nanoid(size = 12): string {
  return randomString(LOWERCASE, 1) + randomString(ALPHANUMERIC, size - 1);
}

/** A share id: 24 characters of [a-z0-9]. */
export function shareIdToken(): string {
  return randomString(`${LOWERCASE}0123456789`, 24);
}
