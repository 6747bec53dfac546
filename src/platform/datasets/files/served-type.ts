import { sniffContentType } from '../../../infra/text-extract.js';
import type { StoredFile } from './file.repo.js';

const RASTER_IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);
/** Types a browser shows without running anything of ours; every other stored file is a download. */
const INLINE_TYPES = new Set([...RASTER_IMAGE_TYPES, 'text/plain', 'application/pdf']);
const KNOWN_CHARSETS = new Set(['utf-8', 'utf-16le', 'utf-16be', 'gbk', 'gb18030', 'big5', 'iso-8859-1']);

/** The raster image type the bytes show (png, jpeg, gif, webp), if any. */
export function rasterImageType(buffer: Buffer): string | undefined {
  const type = sniffContentType(buffer, '');
  return RASTER_IMAGE_TYPES.has(type) ? type : undefined;
}

/** The encoding of bytes sniffed as text: a UTF-16 byte order mark, else UTF-8. */
export function textEncodingOf(buffer: Buffer): string {
  if (buffer[0] === 0xff && buffer[1] === 0xfe) return 'utf-16le';
  if (buffer[0] === 0xfe && buffer[1] === 0xff) return 'utf-16be';
  return 'utf-8';
}

/**
 * How a stored file is served: inline only for raster images, plain text and PDF, anything else
 * (HTML, SVG, XML, unknown) as an attachment, so nothing uploaded renders as a page of our origin.
 * Always with `X-Content-Type-Options: nosniff` (set by the route).
 */
export function servedAs(file: Pick<StoredFile, 'contentType' | 'filename' | 'metadata'>): { contentType: string; disposition: string } {
  const type = /^[\w.+-]+\/[\w.+-]+$/.test(file.contentType) ? file.contentType.toLowerCase() : 'application/octet-stream';
  const encoding = typeof file.metadata.encoding === 'string' ? file.metadata.encoding.toLowerCase() : undefined;
  const charset = type === 'text/plain' && encoding && KNOWN_CHARSETS.has(encoding) ? `; charset=${encoding}` : '';
  const mode = INLINE_TYPES.has(type) ? 'inline' : 'attachment';
  return { contentType: `${type}${charset}`, disposition: `${mode}; filename="${encodeURIComponent(file.filename)}"` };
}
