import { decodeJwtUnchecked, JWT_ERROR, JwtError, signJwt, verifyJwt } from '../../infra/jwt.js';

/**
 * HS256 JWTs as KubeSphere 3.x issues them. Verification errors carry the reference's texts
 * (golang-jwt and KubeSphere's own), because clients and operators see them in 401 bodies.
 */
export type TokenType = 'access_token' | 'refresh_token';

export interface ClusterClaims {
  iss: string;
  sub: string;
  username: string;
  token_type: TokenType;
  iat: number;
  exp: number;
  extra?: Record<string, string[]>;
}

export class TokenError extends Error {}

const MAX_CLOCK_SKEW_SECONDS = 10;

export function signToken(claims: ClusterClaims, secret: string): string {
  return signJwt({ ...claims }, secret);
}

/** Go's time.Duration String(), e.g. 1h2m3.5s, 3m12.5s, 250ms. */
export function goDuration(ms: number): string {
  if (ms === 0) return '0s';
  if (ms < 1000) return `${ms}ms`;
  const hours = Math.floor(ms / 3_600_000);
  const minutes = Math.floor((ms % 3_600_000) / 60_000);
  const seconds = ((ms % 60_000) / 1000).toFixed(3).replace(/\.?0+$/, '');
  return `${hours > 0 ? `${hours}h` : ''}${hours > 0 || minutes > 0 ? `${minutes}m` : ''}${seconds}s`;
}

const goTime = (seconds: number) => new Date(seconds * 1000).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' +0000 UTC');

/** Go's encoding/base64 (RawURLEncoding) error for a segment, naming the first bad byte; null when it decodes. */
function base64Problem(segment: string): string | null {
  const bad = segment.search(/[^A-Za-z0-9_-]/);
  if (bad >= 0) return `illegal base64 data at input byte ${bad}`;
  if (segment.length % 4 === 1) return `illegal base64 data at input byte ${segment.length - 1}`;
  return null;
}

/** Why the library refused a token, in golang-jwt's words (its checks run in this order). */
function referenceText(error: JwtError, token: string, nowMs: number): string {
  const segments = token.split('.');
  if (segments.length !== 3) return 'token contains an invalid number of segments';
  const decoded = decodeJwtUnchecked(token);
  if (!decoded) {
    const problem = segments.map(base64Problem).find((text) => text !== null);
    return problem ?? `token is malformed: ${(error.originalError as Error | undefined)?.message ?? error.message}`;
  }
  if (decoded.header.alg !== 'HS256') return `signing method ${String(decoded.header.alg ?? '')} is invalid`;
  if (error.code === JWT_ERROR.invalidSignature || error.code === JWT_ERROR.missingSignature) {
    return base64Problem(segments[2] ?? '') ?? 'signature is invalid';
  }
  if (error.code === JWT_ERROR.expired) return `jwt: token is expired by ${goDuration(nowMs - Number(decoded.payload.exp) * 1000)}`;
  return `token is malformed: ${error.message}`;
}

/** Checks structure, algorithm, signature, expiry and issue time; returns the claims. */
export function verifyToken(token: string, secret: string, now: Date): ClusterClaims {
  const nowMs = now.getTime();
  let claims: Record<string, unknown>;
  try {
    claims = verifyJwt(token, secret, { nowMs });
  } catch (error) {
    if (error instanceof JwtError) throw new TokenError(referenceText(error, token, nowMs));
    throw error;
  }
  if (typeof claims.username !== 'string' || typeof claims.token_type !== 'string') throw new TokenError('token is malformed: missing username or token_type');
  // golang-jwt refuses a token issued in the future (beyond the skew); the library does not check iat.
  if (typeof claims.iat === 'number' && claims.iat > nowMs / 1000 + MAX_CLOCK_SKEW_SECONDS) {
    throw new TokenError(`jwt: token used before issued, iat:${goTime(claims.iat)}, now:${goTime(Math.floor(nowMs / 1000))}`);
  }
  return claims as unknown as ClusterClaims;
}
