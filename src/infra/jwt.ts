import { createDecoder, createSigner, createVerifier, TOKEN_ERROR_CODES, TokenError } from 'fast-jwt';
import { deepFreeze } from './deep-freeze.js';
import { LruMap } from './lru-map.js';

/**
 * The HS256 JSON Web Tokens this service issues (platform sessions, signed file links, cluster
 * tokens), through fast-jwt: the library encodes, checks the algorithm, compares signatures in
 * constant time and checks expiry. Callers put `iat` and `exp` in the claims from their own clock
 * and pass the time to verification, so tests can move time. A token is valid up to and
 * including the instant of its `exp`.
 */
export { TokenError as JwtError, TOKEN_ERROR_CODES as JWT_ERROR };

export type JwtClaims = Record<string, unknown> & { iat: number; exp: number };

const signers = new Map<string, (claims: JwtClaims) => string>();

export function signJwt(claims: JwtClaims, secret: string): string {
  let sign = signers.get(secret);
  if (!sign) {
    sign = createSigner({ key: secret, algorithm: 'HS256' }) as (claims: JwtClaims) => string;
    signers.set(secret, sign);
  }
  return sign(claims);
}

/**
 * One verifier per secret and required-claims list: building one derives a key object, which is
 * most of the cost of a verification. fast-jwt fixes the clock when a verifier is built, so the
 * shared ones leave the time claims to `checkTimeClaims`, which reads the caller's clock.
 * Each keeps the claims of the tokens it recently accepted, so a client sending the same token
 * on every request is not decoded and re-signed each time; the time claims are still checked on
 * every use, and only well-signed tokens are kept (revocation is the callers' own check).
 */
const VERIFIED_TOKENS_KEPT = 10_000;
const verifiers = new Map<string, (token: string) => Record<string, unknown>>();

function verifierFor(secret: string, requiredClaims: string[] | undefined): (token: string) => Record<string, unknown> {
  const key = `${requiredClaims?.join(',') ?? ''}\u0000${secret}`;
  let verify = verifiers.get(key);
  if (!verify) {
    const check = createVerifier({ key: secret, algorithms: ['HS256'], requiredClaims, ignoreExpiration: true, ignoreNotBefore: true });
    const accepted = new LruMap<Record<string, unknown>>(VERIFIED_TOKENS_KEPT);
    verify = (token: string) => {
      let claims = accepted.get(token);
      if (!claims) {
        claims = deepFreeze(check(token) as Record<string, unknown>);
        accepted.set(token, claims);
      }
      return claims;
    };
    verifiers.set(key, verify);
  }
  return verify;
}

/** fast-jwt's own rules for `exp` and `nbf` (numbers of seconds; `exp` inclusive), at `nowMs`. */
function checkTimeClaims(claims: Record<string, unknown>, nowMs: number): void {
  for (const claim of ['exp', 'nbf'] as const) {
    if (!(claim in claims)) continue;
    const value = claims[claim];
    if (typeof value !== 'number') throw new TokenError(TOKEN_ERROR_CODES.invalidClaimType, `The ${claim} claim must be a number.`);
    const at = value * 1000;
    if (claim === 'exp' && nowMs > at) throw new TokenError(TOKEN_ERROR_CODES.expired, `The token has expired at ${new Date(at).toISOString()}.`);
    if (claim === 'nbf' && nowMs < at) throw new TokenError(TOKEN_ERROR_CODES.inactive, `The token will be active at ${new Date(at).toISOString()}.`);
  }
}

/** The claims (frozen) of a well-signed HS256 token unexpired at `nowMs`; throws a JwtError (see its `code`). */
export function verifyJwt(token: string, secret: string, options: { nowMs: number; requiredClaims?: string[] }): Record<string, unknown> {
  const claims = verifierFor(secret, options.requiredClaims)(token);
  checkTimeClaims(claims, options.nowMs);
  return claims;
}

const decodeComplete = createDecoder({ complete: true });

/** Header and payload of a token, unchecked: only to explain why verification refused it. */
export function decodeJwtUnchecked(token: string): { header: Record<string, unknown>; payload: Record<string, unknown> } | null {
  try {
    const { header, payload } = decodeComplete(token) as { header: Record<string, unknown>; payload: Record<string, unknown> };
    return { header, payload };
  } catch {
    return null;
  }
}
