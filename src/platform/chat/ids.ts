import { LOWERCASE, randomString } from '../../infra/random-string.js';

/** A share id: 24 characters of [a-z0-9]. */
export function shareIdToken(): string {
  return randomString(`${LOWERCASE}0123456789`, 24);
}
