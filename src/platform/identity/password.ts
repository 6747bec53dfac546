import { createHash } from 'node:crypto';
import { hashPassword as hashNormalized, verifyPassword as verifyNormalized } from '../../infra/password-hash.js';

export { decoyPasswordHash } from '../../infra/password-hash.js';

/**
 * The platform's rule: the reference web client sends sha256(password) as hex, other clients
 * the plain text; both are normalised to that hex form, which is what gets hashed. A 64-hex
 * value is taken as the client's sha256 already; anything else is hashed first.
 */
export function normalizePassword(received: string): string {
  if (/^[0-9a-fA-F]{64}$/.test(received)) return received.toLowerCase();
  return createHash('sha256').update(received, 'utf8').digest('hex');
}

/** The stored hash of a password as received. */
export const hashPassword = (received: string) => hashNormalized(normalizePassword(received));

/** Constant-time check of a password as received against a stored hash. */
export const verifyPassword = (received: string, stored: string | undefined | null) => verifyNormalized(normalizePassword(received), stored);
