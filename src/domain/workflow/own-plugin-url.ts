/**
 * FastGPT's plugin templates give the HTTP node relative URLs such as `/api/plugins/TFSwitch`:
 * the reference resolves them against its own address. Only paths under `/api/plugins/` are
 * treated so; any other relative URL stays an ordinary (refused) target.
 */
const SELF_ORIGIN = 'http://self.invalid';
const PLUGIN_PATH = /^\/api\/plugins\/[A-Za-z0-9_-]+(?:\/[A-Za-z0-9_-]+)*$/;

/** The path and query to call on this service for a relative plugin URL, else null. */
export function ownPluginPath(url: string): string | null {
  // `//host/…` and `/\host/…` are absolute URLs in disguise.
  if (!url.startsWith('/') || url.startsWith('//') || url.startsWith('/\\')) return null;
  let parsed: URL;
  try {
    parsed = new URL(url, SELF_ORIGIN);
  } catch {
    return null;
  }
  // Dot segments are resolved by the parser; encoded characters are not allowed in the path.
  if (parsed.origin !== SELF_ORIGIN || !PLUGIN_PATH.test(parsed.pathname)) return null;
  return `${parsed.pathname}${parsed.search}`;
}
