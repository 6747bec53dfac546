/** A configured base URL without its trailing slashes (bases are written with and without one). */
export function withoutTrailingSlashes(base: string): string {
  return base.replace(/\/+$/, '');
}

/** A configured base URL followed by a path that starts with a slash. */
export function joinUrl(base: string, path: string): string {
  return `${withoutTrailingSlashes(base)}${path}`;
}
