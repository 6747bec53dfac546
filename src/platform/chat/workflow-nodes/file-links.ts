/** File links as chat questions carry them: this service's own (`?filename=`) and anyone's. */
import { textHead } from '../../../domain/text-cut.js';
import { OWN_FILE_READ_PATH, ownServicePath } from '../../../domain/workflow/own-service-url.js';
import { decodeJwtUnchecked } from '../../../infra/jwt.js';
import { uniqueBy } from '../../../domain/unique-by.js';

/**
 * A file's name from its link: this service's links name it in a `filename` parameter, others
 * end with it. A link that does not parse (a client sent it) is named by its text.
 */
export function fileNameOf(url: string): string {
  try {
    const parsed = new URL(url, 'http://local');
    return parsed.searchParams.get('filename') || decodeURIComponent(parsed.pathname.split('/').pop() || 'file');
  } catch {
    return textHead(url, 200) || 'file';
  }
}

/** The extension of a link's file name, lower case ('' without one). */
export function fileExtensionOf(url: string): string {
  const name = fileNameOf(url);
  const dot = name.lastIndexOf('.');
  return dot >= 0 ? name.slice(dot + 1).toLowerCase() : '';
}

/**
 * What a link reads. This service's read links name their file in the signed token: links
 * spelled differently (`/api/x/../common/…`, another `filename`, parameters in another order,
 * another token for the same file) read one file. Other links are their resolved URL. The token
 * is not checked here (the read checks it): a made-up one naming a file only stands in for that
 * file's own link among the asker's own links.
 */
function fileIdentityOf(url: string): string {
  const own = ownServicePath(url, OWN_FILE_READ_PATH);
  if (own) {
    const token = new URL(own, 'http://local').searchParams.get('token') ?? '';
    const claims = decodeJwtUnchecked(token)?.payload;
    return typeof claims?.fileId === 'string' ? `file ${String(claims.bucketName)} ${String(claims.teamId)} ${claims.fileId}` : `own ${own}`;
  }
  try {
    return `url ${new URL(url).href}`;
  } catch {
    return `text ${url}`;
  }
}

/** The first link of each file, in order (see fileIdentityOf). */
export function distinctFileLinks(urls: readonly string[]): string[] {
  return uniqueBy(urls, fileIdentityOf);
}
