import { ClusterErrors } from '../../infra/errors.js';

const notAllowed = (why: string) =>
  ClusterErrors.oauthInvalidRequest(`post_logout_redirect_uri ${why}: only a path on this service's host or a URI listed in OAUTH_LOGOUT_REDIRECT_URIS`);

/** A configured entry matches exactly, or, when it names only an origin, any URI on that origin. */
function matchesConfigured(target: URL, configured: readonly string[]): boolean {
  return configured.some((entry) => {
    const allowed = new URL(entry);
    const originOnly = allowed.pathname === '/' && !allowed.search && !allowed.hash;
    return originOnly ? allowed.origin === target.origin : allowed.href === target.href;
  });
}

/**
 * Where /oauth/logout may send the browser. The reference redirects anywhere (an open redirect);
 * here only a relative URI, an absolute one on the request's own host, or a configured one is
 * followed; anything else is a 400 before the logout happens. `state` is appended when given.
 */
export function logoutRedirectLocation(raw: string, state: string | undefined, request: { protocol: string; host: string }, configured: readonly string[]): string {
  // A Host header that is not a host name matches nothing (relative URIs are then refused too).
  const self = URL.canParse(`${request.protocol}://${request.host}`) ? new URL(`${request.protocol}://${request.host}`) : new URL('http://invalid.invalid');
  let target: URL;
  try {
    target = new URL(raw, self);
  } catch {
    throw notAllowed('is not a valid URI');
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:') throw notAllowed('must be an http(s) URI');
  if (target.username || target.password) throw notAllowed('must not carry credentials');
  const sameHost = self.hostname !== 'invalid.invalid' && target.host === self.host;
  if (!sameHost && !matchesConfigured(target, configured)) throw notAllowed(`points to ${target.host}, which is not allowed`);
  if (state) target.searchParams.set('state', state);
  const absolute = /^[a-z][a-z0-9+.-]*:/i.test(raw);
  if (!sameHost || absolute) return target.href;
  // A relative URI stays relative (its path, query and fragment as resolved). Dot segments can
  // resolve to a path beginning with `//` (`/.//evil.example`), which a browser reads as another
  // host: such a path is refused.
  if (target.pathname.startsWith('//')) throw notAllowed('resolves to a path beginning with //');
  return `${target.pathname}${target.search}${target.hash}`;
}
