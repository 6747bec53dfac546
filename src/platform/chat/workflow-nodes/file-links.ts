/** File links as chat questions carry them: this service's own (`?filename=`) and anyone's. */
import { textHead } from '../../../domain/text-cut.js';

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
