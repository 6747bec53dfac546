import { createDecoder, createSigner, createVerifier, TOKEN_ERROR_CODES, TokenError } from 'fast-jwt';

/**
 * The HS256 JSON Web Tokens this service issues (platform sessions, signed file links, cluster
 * tokens), through fast-jwt: the library encodes, checks the algorithm, compares signatures in
 * constant time and checks expiry. Callers put `iat` and `exp` in the claims from their own clock
 * and pass the time to verification, so tests can move time. A token is valid up to and
 * including the instant of its `exp`.
 */
export { TokenError as JwtError, TOKEN_ERROR_CODES as JWT_ERROR };

export type JwtClaims = Record<string, unknown> & { iat: number; exp: number };

export function signJwt(claims: JwtClaims, secret: string): string {
  return createSigner({ key: secret, algorithm: 'HS256' })(claims);
}

/** The claims of a well-signed HS256 token unexpired at `nowMs`; throws a JwtError (see its `code`). */
export function verifyJwt(token: string, secret: string, options: { nowMs: number; requiredClaims?: string[] }): Record<string, unknown> {
  // The verifier reads the time when it is built, hence one per call (as @fastify/jwt does for per-call options).
  const verify = createVerifier({ key: secret, algorithms: ['HS256'], clockTimestamp: options.nowMs, requiredClaims: options.requiredClaims });
  return verify(token) as Record<string, unknown>;
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
