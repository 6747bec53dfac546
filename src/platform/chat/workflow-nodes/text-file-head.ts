/**
 * The beginning of a large text or Markdown file, for readFiles, which keeps only so much of its
 * files' text: decoded a slice at a time, the event loop handed back between slices, and never
 * past what is kept (decoding a 100 MB file at once held the loop for about half a second). For
 * the part read, the same text as the shared extractor gives (infra/text-extract.ts decodeText):
 * UTF-8 or UTF-16 by BOM, else UTF-8, else GB18030; binary content refused; normalised alike.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { TextDecoder } from 'node:util';
import { Errors } from '../../../infra/errors.js';
import { controlRatio, normalizeExtractedText, textBomOf } from '../../../infra/text-extract.js';

/** Bytes decoded between two hand-backs of the event loop (a few milliseconds of work). */
const SLICE_BYTES = 1024 * 1024;

class NotThisEncoding extends Error {}

/**
 * Decodes `buffer` from `start` until more than `maxChars` characters are out or the buffer
 * ends. `strict`: a byte sequence invalid in `encoding`, or a NUL, throws NotThisEncoding / a 400.
 */
async function decodeSlices(buffer: Buffer, filename: string, start: number, encoding: string, strict: boolean, maxChars: number) {
  let decoder: TextDecoder;
  try {
    decoder = new TextDecoder(encoding, { fatal: strict });
  } catch {
    throw new NotThisEncoding();
  }
  let text = '';
  let at = start;
  while (at < buffer.length && text.length <= maxChars) {
    const end = Math.min(at + SLICE_BYTES, buffer.length);
    const slice = buffer.subarray(at, end);
    if (strict && slice.includes(0)) throw Errors.missingParams(`File '${filename}' is binary, not text`);
    try {
      text += decoder.decode(slice, { stream: end < buffer.length });
    } catch {
      throw new NotThisEncoding();
    }
    at = end;
    if (at < buffer.length) await nextTurn();
  }
  return { text, whole: at >= buffer.length };
}

/**
 * At least the first `maxChars` characters of a text file's normalised text (all of it when
 * shorter; a little more may come, which the caller cuts), and whether that is the whole file.
 */
export async function textFileHead(buffer: Buffer, filename: string, maxChars: number): Promise<{ text: string; whole: boolean }> {
  const bom = textBomOf(buffer);
  let decoded: { text: string; whole: boolean };
  if (bom) decoded = await decodeSlices(buffer, filename, bom.length, bom.encoding, false, maxChars);
  else {
    try {
      decoded = await decodeSlices(buffer, filename, 0, 'utf-8', true, maxChars);
    } catch (error) {
      if (!(error instanceof NotThisEncoding)) throw error;
      try {
        // Not UTF-8: legacy Chinese encodings are the common case (as the shared extractor reads them).
        decoded = await decodeSlices(buffer, filename, 0, 'gb18030', true, maxChars);
      } catch (second) {
        if (!(second instanceof NotThisEncoding)) throw second;
        throw Errors.missingParams(`File '${filename}' is not valid text (unknown encoding or binary content)`);
      }
    }
  }
  if (controlRatio(decoded.text) > 0.05) throw Errors.missingParams(`File '${filename}' is binary, not text`);
  const text = normalizeExtractedText(decoded.text);
  if (!text && decoded.whole) throw Errors.missingParams(`File '${filename}' contains no text`);
  return { text, whole: decoded.whole };
}
