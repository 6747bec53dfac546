import { createHmac, timingSafeEqual } from 'node:crypto';

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

const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const sign = (input: string, secret: string) => createHmac('sha256', secret).update(input).digest();

export function signToken(claims: ClusterClaims, secret: string): string {
  const input = `${encode({ alg: 'HS256', typ: 'JWT' })}.${encode(claims)}`;
  return `${input}.${sign(input, secret).toString('base64url')}`;
}

/** Go-style base64url check, naming the first bad byte as encoding/base64 does. */
function decodeSegment(segment: string): Buffer {
  const bad = segment.search(/[^A-Za-z0-9_-]/);
  if (bad >= 0) throw new TokenError(`illegal base64 data at input byte ${bad}`);
  if (segment.length % 4 === 1) throw new TokenError(`illegal base64 data at input byte ${segment.length - 1}`);
  return Buffer.from(segment, 'base64url');
}

function parseJson(segment: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(decodeSegment(segment).toString('utf8'));
  } catch (error) {
    if (error instanceof TokenError) throw error;
    throw new TokenError(`token is malformed: ${(error as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new TokenError('token is malformed: not a JSON object');
  return value as Record<string, unknown>;
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

/** Checks structure, algorithm, signature, expiry and issue time; returns the claims. */
export function verifyToken(token: string, secret: string, now: Date): ClusterClaims {
  const parts = token.split('.');
  if (parts.length !== 3) throw new TokenError('token contains an invalid number of segments');
  const [headerPart, payloadPart, signaturePart] = parts as [string, string, string];
  const header = parseJson(headerPart);
  if (header.alg !== 'HS256') throw new TokenError(`signing method ${String(header.alg ?? '')} is invalid`);
  const claims = parseJson(payloadPart);
  const signature = decodeSegment(signaturePart);
  const expected = sign(`${headerPart}.${payloadPart}`, secret);
  if (signature.length !== expected.length || !timingSafeEqual(signature, expected)) throw new TokenError('signature is invalid');
  if (typeof claims.username !== 'string' || typeof claims.token_type !== 'string') throw new TokenError('token is malformed: missing username or token_type');
  const nowMs = now.getTime();
  if (typeof claims.exp === 'number' && nowMs > claims.exp * 1000) {
    throw new TokenError(`jwt: token is expired by ${goDuration(nowMs - claims.exp * 1000)}`);
  }
  if (typeof claims.iat === 'number' && claims.iat > nowMs / 1000 + MAX_CLOCK_SKEW_SECONDS) {
    throw new TokenError(`jwt: token used before issued, iat:${goTime(claims.iat)}, now:${goTime(Math.floor(nowMs / 1000))}`);
  }
  return claims as unknown as ClusterClaims;
}
