import { createHmac, timingSafeEqual } from 'node:crypto';

/** The claims of a platform session JWT (the reference's, plus our session id `sid`). */
export interface SessionClaims {
  userId: string;
  teamId: string;
  tmbId: string;
  isRoot: boolean;
  sid: string;
  iat: number;
  exp: number;
}

export const SESSION_TTL_SECONDS = 7 * 24 * 3600;

const base64url = (data: Buffer | string) => Buffer.from(data).toString('base64url');
const HEADER = base64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));

function sign(data: string, secret: string): Buffer {
  return createHmac('sha256', secret).update(data).digest();
}

/** HS256 with TOKEN_KEY, as the reference's jsonwebtoken default. */
export function signSessionToken(claims: Omit<SessionClaims, 'iat' | 'exp'> & { iat?: number; exp?: number }, secret: string, nowSeconds: number): string {
  const iat = claims.iat ?? nowSeconds;
  const payload = { ...claims, iat, exp: claims.exp ?? iat + SESSION_TTL_SECONDS };
  const body = `${HEADER}.${base64url(JSON.stringify(payload))}`;
  return `${body}.${base64url(sign(body, secret))}`;
}

/** Returns the claims of a well-signed, unexpired token, or null. Only HS256 is accepted. */
export function verifySessionToken(token: string, secret: string, nowSeconds: number): SessionClaims | null {
  const parts = token.split('.');
  if (parts.length !== 3) return null;
  const [header, payload, signature] = parts as [string, string, string];
  let claims: Partial<SessionClaims>;
  try {
    const head = JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as { alg?: string };
    if (head.alg !== 'HS256') return null;
    const expected = sign(`${header}.${payload}`, secret);
    const given = Buffer.from(signature, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Partial<SessionClaims>;
  } catch {
    return null;
  }
  if (typeof claims.exp !== 'number' || claims.exp <= nowSeconds) return null;
  if (typeof claims.userId !== 'string' || typeof claims.tmbId !== 'string' || typeof claims.sid !== 'string') return null;
  return {
    userId: claims.userId,
    teamId: typeof claims.teamId === 'string' ? claims.teamId : '',
    tmbId: claims.tmbId,
    isRoot: claims.isRoot === true,
    sid: claims.sid,
    iat: typeof claims.iat === 'number' ? claims.iat : 0,
    exp: claims.exp,
  };
}
