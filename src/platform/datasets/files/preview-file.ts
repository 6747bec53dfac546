import { isUtf8 } from 'node:buffer';
import { parse } from 'csv-parse/sync';
import { CSV_PARSE_OPTIONS, csvRowsToMarkdownTable } from '../../../infra/csv.js';
import { controlRatio, normalizeExtractedText, textBomOf } from '../../../infra/text-extract.js';
import { isRawCsv, qaItemsOf, withoutNul } from '../collections/collection-sources.js';
import { decodedFormatOf } from './csv-read.js';
import type { StoredFile } from './file.repo.js';
import { TEXT_FILE_INLINE_MAX_BYTES } from './large-text.js';
import { firstChunks, PREVIEW_CHUNK_COUNT, type PreviewSplitOptions, settlingLength } from './preview-chunks.js';

/**
 * getPreviewChunks of a text or CSV file from the file's first bytes: a preview shows five chunks
 * (or five Q/A rows), so the whole file is neither decoded, nor parsed (a 20 MB CSV: 2.4 s, 1.8 s
 * of it blocking the event loop, +431 MB), nor split. The whole file is still read from storage
 * and checked for NUL bytes and valid UTF-8 (native scans), so the encoding is the one the import
 * uses. The beginning read grows (×4) until what it yields is settled (preview-chunks.ts); when it
 * never is, or the file is not one of these, the caller reads the whole file as before. The answer
 * is the whole file's, except that a CSV's Markdown table is as wide as the widest row read (the
 * import pads every row to the widest of the file), and that what is wrong only past the rows or
 * text read (binary content, a malformed CSV row, invalid GB18030) is refused by the import, not by
 * the preview.
 */

/** Bytes read first: at least this, and twice the characters the split first tries (at most LAST_READ_BYTES). */
const FIRST_READ_BYTES = 64 * 1024;
/**
 * Beginnings read inline are at most this, as much as a text is split inline elsewhere: a file
 * whose beginning of that size settles nothing (a one-column CSV for a Q/A preview; chunks of
 * 30,000 characters, whose 2.5 M-character first prefix took ~1 s to split inline) is read whole
 * by the caller, in the large-text or CSV worker past it. Growing up to the whole file parsed
 * 64 MB inline (6 s blocked).
 */
const LAST_READ_BYTES = TEXT_FILE_INLINE_MAX_BYTES;

/** The end of a UTF-8 prefix of at most `end` bytes that does not cut a character. */
function utf8Boundary(buffer: Buffer, end: number): number {
  let cut = Math.min(end, buffer.length);
  while (cut > 0 && cut < buffer.length && (buffer[cut]! & 0xc0) === 0x80) cut--;
  return cut;
}

/**
 * The first characters of the text decodeText gives for the whole file, from about `bytes`
 * bytes: the encoding is chosen on the whole file as decodeText chooses it (byte order mark, no
 * NUL byte and valid UTF-8 as a whole, else GB18030, of which only the beginning is decoded).
 * Undefined where only the whole file can answer: NUL bytes or invalid text in what is read
 * (decodeText's 400), or a beginning with more than 5% control characters (refused or not by the
 * whole file's share).
 */
function decodedStart(buffer: Buffer): (bytes: number) => string | undefined {
  const bom = textBomOf(buffer);
  const decode = (bytes: number): string | undefined => {
    if (bom?.encoding === 'utf-8') return buffer.subarray(3, utf8Boundary(buffer, bytes + 3)).toString('utf8');
    if (bom) return new TextDecoder(bom.encoding).decode(buffer.subarray(2, 2 + bytes - (bytes % 2)), { stream: true });
    if (buffer.includes(0)) return undefined;
    if (isUtf8(buffer)) return buffer.subarray(0, utf8Boundary(buffer, bytes)).toString('utf8');
    // GB18030 (not valid UTF-8), as decodeText reads it, from the beginning alone: a character cut
    // at the end waits (stream), an invalid one before it leaves the answer to the whole file (its 400).
    try {
      return new TextDecoder('gb18030', { fatal: true }).decode(buffer.subarray(0, bytes), { stream: true });
    } catch {
      return undefined;
    }
  };
  return (bytes) => {
    const text = decode(bytes);
    return text === undefined || controlRatio(text) > 0.05 ? undefined : text;
  };
}

/**
 * The rows of a CSV text's beginning that are surely whole: all but the last (which may be cut
 * short), or, when the beginning ends inside a quoted cell, the rows before that cell's.
 * Undefined when there are none, or the text is malformed before its end (the whole file's 400).
 */
function wholeRowsOf(start: string): string[][] | undefined {
  const input = start.replace(/^\uFEFF/, '');
  if (!input.trim()) return undefined;
  try {
    return (parse(input, CSV_PARSE_OPTIONS) as string[][]).slice(0, -1);
  } catch (error) {
    const { code, records } = error as { code?: string; records?: number };
    if (code !== 'CSV_QUOTE_NOT_CLOSED' || !records) return undefined;
    return parse(input, { ...CSV_PARSE_OPTIONS, to: records }) as string[][];
  }
}

/** Q/A items of a CSV's beginning when they settle the preview: enough of them, and a row of two columns (the whole file's check). */
function qaStart(start: string, count: number): { q: string; a: string }[] | undefined {
  const rows = wholeRowsOf(start);
  if (!rows?.some((row) => row.length >= 2)) return undefined;
  const items = qaItemsOf(rows);
  return items.length >= count ? items.slice(0, count) : undefined;
}

export interface FilePreviewInput extends PreviewSplitOptions {
  isQAImport?: boolean;
}

/**
 * The preview of a stored text or CSV file from its first bytes, or undefined: read the whole
 * file (another format, a file barely longer than the first read, or a beginning that settles
 * nothing).
 */
export function previewFromFileStart(
  file: Pick<StoredFile, 'filename' | 'contentType'>,
  buffer: Buffer,
  input: FilePreviewInput,
  count = PREVIEW_CHUNK_COUNT,
): { q: string; a: string }[] | undefined {
  const format = decodedFormatOf(file);
  const raw = isRawCsv(file, input.isQAImport);
  // A CSV named by its type alone and read as Q/A: the Q/A rows of its Markdown table (rare; whole).
  if (!format || (format === 'csv' && input.isQAImport && !raw)) return undefined;
  const decoded = decodedStart(buffer);
  const first = Math.min(LAST_READ_BYTES, Math.max(FIRST_READ_BYTES, 2 * settlingLength(input, count)));
  for (let bytes = first; bytes < buffer.length && bytes <= LAST_READ_BYTES; bytes *= 4) {
    const start = decoded(bytes);
    if (start === undefined) return undefined;
    if (raw || input.isQAImport) {
      const items = qaStart(raw ? withoutNul(start) : normalizeExtractedText(start), count);
      if (items) return items;
      continue;
    }
    let text = normalizeExtractedText(start);
    if (format === 'csv') {
      const rows = wholeRowsOf(start);
      if (!rows?.length) continue;
      text = normalizeExtractedText(csvRowsToMarkdownTable(rows));
    }
    const chunks = firstChunks(text, input, false, count);
    if (chunks) return chunks.map((q) => ({ q, a: '' }));
  }
  return undefined;
}
