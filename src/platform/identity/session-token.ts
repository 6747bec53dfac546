import { JwtError, signJwt, verifyJwt } from '../../infra/jwt.js';

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

/** HS256 with TOKEN_KEY, as the reference's jsonwebtoken default. */
export function signSessionToken(claims: Omit<SessionClaims, 'iat' | 'exp'> & { iat?: number; exp?: number }, secret: string, nowMs: number): string {
  const iat = claims.iat ?? Math.floor(nowMs / 1000);
  return signJwt({ ...claims, iat, exp: claims.exp ?? iat + SESSION_TTL_SECONDS }, secret);
}

/** Returns the claims of a well-signed, unexpired token, or null. Only HS256 is accepted. */
export function verifySessionToken(token: string, secret: string, nowMs: number): SessionClaims | null {
  let claims: Record<string, unknown>;
  try {
    claims = verifyJwt(token, secret, { nowMs, requiredClaims: ['exp'] });
  } catch (error) {
    if (error instanceof JwtError) return null;
    throw error;
  }
  if (typeof claims.userId !== 'string' || typeof claims.tmbId !== 'string' || typeof claims.sid !== 'string') return null;
  return {
    userId: claims.userId,
    teamId: typeof claims.teamId === 'string' ? claims.teamId : '',
    tmbId: claims.tmbId,
    isRoot: claims.isRoot === true,
    sid: claims.sid,
    iat: typeof claims.iat === 'number' ? claims.iat : 0,
    exp: claims.exp as number,
  };
}
