/**
 * Uploaded file → plain text / Markdown for datasets (the reference's file import; docs/datasets.md), with well-kept parsers:
 * txt/md decoded (UTF-8/UTF-16 by BOM, else UTF-8, else GB18030 for legacy Chinese files);
 * html → Markdown; csv → a Markdown table (first row as header); docx via mammoth → HTML →
 * Markdown, unpacked within limits and converted in a worker thread; pdf via pdfjs-dist in a
 * worker thread (page headers/footers dropped).
 * Empty, binary-as-text, unreadable or unsupported files are 400 errors saying why.
 */
import { isUtf8 } from 'node:buffer';
import path from 'node:path';
import { csvRowsToMarkdownTable, parseCsv } from './csv.js';
import { readDocxHtml } from './docx-html.js';
import { Errors, isAppError } from './errors.js';
import { htmlToMarkdownBounded, INLINE_MAX_CHARS } from './html-to-markdown.js';
import { readPdfText } from './pdf-text.js';
import type { WorkerTaskOwner } from './worker-task.js';

export type ExtractedFormat = 'txt' | 'md' | 'html' | 'csv' | 'pdf' | 'docx';

export const DOCX_MIME = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const SUPPORTED = 'Only .txt, .md, .html, .csv, .pdf and .docx files are supported';

const EXTENSION_FORMATS: Record<string, ExtractedFormat> = {
  txt: 'txt',
  text: 'txt',
  md: 'md',
  markdown: 'md',
  html: 'html',
  htm: 'html',
  csv: 'csv',
  pdf: 'pdf',
  docx: 'docx',
};
const MIME_FORMATS: Record<string, ExtractedFormat> = {
  'text/plain': 'txt',
  'text/markdown': 'md',
  'text/x-markdown': 'md',
  'text/html': 'html',
  'text/csv': 'csv',
  'application/pdf': 'pdf',
  [DOCX_MIME]: 'docx',
};

const startsWith = (buffer: Uint8Array, bytes: readonly number[], offset = 0) => bytes.every((byte, i) => buffer[offset + i] === byte);

/**
 * The content type by magic bytes: pdf, docx/zip, png, jpeg, gif, webp, else text/plain for
 * NUL-free UTF-8 (both native scans: no string is built, a 100 MB upload is judged in ms).
 */
export function sniffContentType(buffer: Buffer, filename: string): string {
  if (startsWith(buffer, [0x25, 0x50, 0x44, 0x46, 0x2d])) return 'application/pdf';
  if (startsWith(buffer, [0x50, 0x4b, 0x03, 0x04])) {
    const isDocx = filename.toLowerCase().endsWith('.docx') || buffer.includes('word/document.xml');
    return isDocx ? DOCX_MIME : 'application/zip';
  }
  if (startsWith(buffer, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  if (startsWith(buffer, [0xff, 0xd8, 0xff])) return 'image/jpeg';
  if (startsWith(buffer, [0x47, 0x49, 0x46, 0x38])) return 'image/gif';
  if (startsWith(buffer, [0x52, 0x49, 0x46, 0x46]) && startsWith(buffer, [0x57, 0x45, 0x42, 0x50], 8)) return 'image/webp';
  if (startsWith(buffer, [0xff, 0xfe]) || startsWith(buffer, [0xfe, 0xff])) return 'text/plain';
  if (!buffer.includes(0) && isUtf8(buffer)) return 'text/plain';
  return 'application/octet-stream';
}

/** The format a file is read as: by its extension, or by its type when its name has none; undefined when neither is supported. */
export function formatOfFile(filename: string, mimetype: string | undefined): ExtractedFormat | undefined {
  const extension = path.extname(filename).slice(1).toLowerCase();
  const byExtension = EXTENSION_FORMATS[extension];
  if (byExtension) return byExtension;
  const byMime = mimetype ? MIME_FORMATS[mimetype.split(';')[0]!.trim().toLowerCase()] : undefined;
  return byMime && !extension ? byMime : undefined;
}

function formatOf(filename: string, mimetype: string | undefined): ExtractedFormat {
  const format = formatOfFile(filename, mimetype);
  if (!format) throw Errors.missingParams(`${SUPPORTED} (got '${filename}')`);
  return format;
}

/** Control characters other than tab/newline/CR/form feed: a sign of binary content (over 5%: refused). */
export const controlRatio = (text: string) => {
  if (!text) return 0;
  let controls = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code <= 0x08 || (code >= 0x0e && code <= 0x1f) || code === 0x7f) controls++;
  }
  return controls / text.length;
};

const TEXT_BOMS = [
  { bytes: [0xef, 0xbb, 0xbf], encoding: 'utf-8' },
  { bytes: [0xff, 0xfe], encoding: 'utf-16le' },
  { bytes: [0xfe, 0xff], encoding: 'utf-16be' },
] as const;

/** The byte order mark a text file starts with: its encoding and length, or undefined. */
export function textBomOf(buffer: Uint8Array): { encoding: 'utf-8' | 'utf-16le' | 'utf-16be'; length: number } | undefined {
  const bom = TEXT_BOMS.find((candidate) => startsWith(buffer, candidate.bytes));
  return bom && { encoding: bom.encoding, length: bom.bytes.length };
}

/** Decode a file that should be text, refusing binary content. */
export function decodeText(buffer: Buffer, filename: string): string {
  let text: string;
  const bom = textBomOf(buffer);
  if (bom?.encoding === 'utf-8') text = buffer.subarray(bom.length).toString('utf8');
  else if (bom) text = new TextDecoder(bom.encoding).decode(buffer.subarray(bom.length));
  else if (buffer.includes(0)) throw Errors.missingParams(`File '${filename}' is binary, not text`);
  // Checked natively, then decoded once (a fatal TextDecoder built the whole string only to check it).
  else if (isUtf8(buffer)) text = buffer.toString('utf8');
  else {
    try {
      // Not UTF-8: legacy Chinese encodings are the common case (the reference decodes them as GBK).
      text = new TextDecoder('gb18030', { fatal: true }).decode(buffer);
    } catch {
      throw Errors.missingParams(`File '${filename}' is not valid text (unknown encoding or binary content)`);
    }
  }
  if (controlRatio(text) > 0.05) throw Errors.missingParams(`File '${filename}' is binary, not text`);
  return text;
}

/**
 * Whose extraction this is (worker-task.ts) and what ends it: `signal` (a chat turn's hang-up)
 * stops it between its steps: no conversion starts once it aborted.
 */
export interface ExtractionTask extends WorkerTaskOwner {
  signal?: AbortSignal;
}

async function extractDocx(buffer: Buffer, filename: string, task: ExtractionTask): Promise<string> {
  if (!startsWith(buffer, [0x50, 0x4b, 0x03, 0x04])) throw Errors.missingParams(`File '${filename}' is not a .docx document`);
  let html: string;
  try {
    html = await readDocxHtml(buffer, task);
  } catch (error) {
    // A busy service (429) is not the file's fault.
    if (isAppError(error)) throw error;
    throw Errors.missingParams(`Cannot read the .docx file '${filename}' (${(error as Error).message}); convert it to PDF and retry`);
  }
  // Two conversions, each in a worker: an ended extraction does not start the second.
  task.signal?.throwIfAborted();
  return (await htmlToMarkdownBounded(html, {}, task)).markdown;
}

async function extractPdf(buffer: Buffer, filename: string, task: ExtractionTask): Promise<string> {
  if (!startsWith(buffer, [0x25, 0x50, 0x44, 0x46, 0x2d])) throw Errors.missingParams(`File '${filename}' is not a PDF document`);
  try {
    return await readPdfText(buffer, task);
  } catch (error) {
    if (isAppError(error)) throw error;
    const { message, tooLarge } = error as Error & { tooLarge?: boolean };
    throw Errors.missingParams(`Cannot read the PDF file '${filename}': ${message}${tooLarge ? '; split it into smaller files' : ''}`);
  }
}

/** What every extracted text goes through: NUL removed, line ends and runs of blank lines made one, trimmed. */
export function normalizeExtractedText(text: string): string {
  // NUL characters (UTF-16 files, PDF and docx text runs) go: PostgreSQL-backed stores refuse them.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: removing NUL is the point
  return text.replace(/\u0000/g, '').replace(/\r\n?/g, '\n').replace(/\n{3,}/g, '\n\n').trim();
}

/**
 * What htmlToMarkdownBounded converts of an .html file: a small file's text (converted inline when
 * tiny), else its bytes, decoded in the worker (a 100 MB page decoded here held the loop ~2 s).
 */
function htmlSource(buffer: Buffer, filename: string): string | { bytes: Buffer; filename: string } {
  return buffer.length > INLINE_MAX_CHARS ? { bytes: buffer, filename } : decodeText(buffer, filename);
}

/**
 * The text of an uploaded file. `task.owner`: the team it is read for; PDF, docx and all but tiny HTML are
 * converted in worker tasks, which wait for that team's turn (worker-task.ts). Once `task.signal`
 * aborted, it rejects with the signal's reason before any conversion starts.
 */
export async function extractText(file: { buffer: Buffer; filename: string; mimetype?: string }, task: ExtractionTask): Promise<{ text: string; format: ExtractedFormat }> {
  const { buffer, filename } = file;
  const format = formatOf(filename, file.mimetype);
  if (buffer.length === 0) throw Errors.missingParams(`File '${filename}' is empty`);
  task.signal?.throwIfAborted();
  let text: string;
  switch (format) {
    case 'txt':
    case 'md':
      text = decodeText(buffer, filename);
      break;
    case 'html':
      text = (await htmlToMarkdownBounded(htmlSource(buffer, filename), {}, task)).markdown;
      break;
    case 'csv':
      text = csvRowsToMarkdownTable(parseCsv(decodeText(buffer, filename)));
      break;
    case 'docx':
      text = await extractDocx(buffer, filename, task);
      break;
    case 'pdf':
      text = await extractPdf(buffer, filename, task);
      break;
  }
  text = normalizeExtractedText(text);
  if (!text) throw Errors.missingParams(`File '${filename}' contains no text`);
  return { text, format };
}
