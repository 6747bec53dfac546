/** A configured base URL without its trailing slashes (bases are written with and without one). */
export function withoutTrailingSlashes(base: string): string {
  return base.replace(/\/+$/, '');
}

/** A configured base URL followed by a path that starts with a slash. */
export function joinUrl(base: string, path: string): string {
  return `${withoutTrailingSlashes(base)}${path}`;
}

/**
 * A URL as an error message may show it: scheme, host and path. Credentials, query and fragment
 * are left out: provider URLs carry secrets there (`corpsecret=`, `access_token=`), and error
 * messages reach the logs, which redaction by field name cannot see into.
 */
export function urlForMessage(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return (url.split(/[?#]/)[0] ?? '').slice(0, 200);
  }
}
