import { createHmac } from 'node:crypto';
import { sameSecret } from './secret-compare.js';

/** The header a workflow run sends when it calls one of this service's own routes. */
export const SELF_CALL_HEADER = 'x-self-call-token';

/**
 * Proves that a request comes from this deployment's own workflow runtime (derived from
 * TOKEN_KEY, so every replica agrees). The source address cannot prove it: behind a reverse
 * proxy every request arrives from loopback.
 */
export function selfCallToken(tokenKey: string): string {
  return createHmac('sha256', tokenKey).update('self-call').digest('base64url');
}

export function isSelfCall(given: unknown, tokenKey: string): boolean {
  return typeof given === 'string' && sameSecret(given, selfCallToken(tokenKey));
}
