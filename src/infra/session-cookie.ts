import type { FastifyRequest } from 'fastify';

/** The platform session cookie (the reference's name). */
export const SESSION_COOKIE = 'fastgpt_token';

/**
 * The cookie is Secure when the request came over https (behind a proxy, only with TRUST_PROXY
 * set, so that X-Forwarded-Proto is believed) or when COOKIE_SECURE says so.
 */
export function sessionCookieOptions(request: FastifyRequest, alwaysSecure: boolean, maxAgeSeconds?: number) {
  return {
    path: '/',
    httpOnly: true,
    sameSite: 'strict' as const,
    secure: alwaysSecure || request.protocol === 'https',
    ...(maxAgeSeconds === undefined ? {} : { maxAge: maxAgeSeconds }),
  };
}

/** The Set-Cookie header value that removes the session cookie. */
export function clearedSessionCookie(request: FastifyRequest, alwaysSecure: boolean): string {
  const secure = sessionCookieOptions(request, alwaysSecure).secure ? '; Secure' : '';
  return `${SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict${secure}`;
}
