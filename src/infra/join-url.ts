/**
 * A configured base URL followed by a path that starts with a slash. Bases are written with and
 * without a trailing slash (`http://host/v1/`), so the base's trailing slashes go first.
 */
export function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, '')}${path}`;
}
