/**
 * FastGPT resolves some relative URLs in a workflow against its own address: the HTTP node's
 * `/api/plugins/…` (plugin templates) and chat files' `/api/common/file/read?token=…` (read by
 * the readFiles node). Only those paths are treated so; any other relative URL stays an
 * ordinary (refused) target.
 */
const SELF_ORIGIN = 'http://self.invalid';

/** Paths of this service's plugin endpoints. */
export const OWN_PLUGIN_PATH = /^\/api\/plugins\/[A-Za-z0-9_-]+(?:\/[A-Za-z0-9_-]+)*$/;
/** The signed file-read link of uploaded files. */
export const OWN_FILE_READ_PATH = /^\/api\/common\/file\/read$/;

/** The path and query to call on this service when `url` is relative and its path matches, else null. */
export function ownServicePath(url: string, path: RegExp): string | null {
  // `//host/…` and `/\host/…` are absolute URLs in disguise.
  if (!url.startsWith('/') || url.startsWith('//') || url.startsWith('/\\')) return null;
  let parsed: URL;
  try {
    parsed = new URL(url, SELF_ORIGIN);
  } catch {
    return null;
  }
  // Dot segments are resolved by the parser; the patterns allow no encoded characters.
  if (parsed.origin !== SELF_ORIGIN || !path.test(parsed.pathname)) return null;
  return `${parsed.pathname}${parsed.search}`;
}
