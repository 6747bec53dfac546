/**
 * PDF → text with pdfjs-dist, parsed in a worker thread so a large or hostile PDF neither
 * blocks the event loop nor runs forever (time and heap limits). The worker also joins the text
 * items (`joinPdfPages`, pure, by the reference's rules): only the text crosses to the main
 * thread, not an item list that a few KB of PDF can make millions long.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { runWorkerTask, type WorkerTaskOwner } from './worker-task.js';

/** One text item: its string, whether it ends a line, its baseline height on the page (or null). */
export type PdfItem = [text: string, endsLine: boolean, y: number | null];
export interface PdfPage {
  height: number;
  items: PdfItem[];
}

export class PdfReadError extends Error {
  override name = 'PdfReadError';
}

export const PDF_PARSE_TIMEOUT_MS = 60_000;
const PDF_WORKER_HEAP_MB = 512;
/**
 * Decoded streams live in ArrayBuffers, outside the heap that `maxOldGenerationSizeMb` bounds: a
 * 2 MB PDF whose content stream inflates to 2 GB grew the process by 4 GB. The worker counts the
 * typed arrays and ArrayBuffers of 64 KB or more it allocates until they are collected, and stops
 * past this many bytes (a 400), as zip-archive.ts bounds a .docx's inflation.
 */
export const PDF_WORKER_BUFFERS_MB = 256;

// Plain JavaScript run by the worker (eval), so it works the same from sources and from dist.
// The allocation guard wraps the global constructors before pdfjs loads: its DecodeStream grows
// one Uint8Array by doubling (`new Uint8Array(size)`), which the guard sees and refuses.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const LARGE_BYTES = 64 * 1024;
let liveBytes = 0;
let overLimit = false;
const collected = new FinalizationRegistry((bytes) => { liveBytes -= bytes; });
const OriginalArrayBuffer = ArrayBuffer;
function bytesAsked(first, perElement) {
  if (typeof first === 'number') return first * perElement;
  if (first === null || typeof first !== 'object' || first instanceof OriginalArrayBuffer || first instanceof SharedArrayBuffer) return 0;
  return typeof first.length === 'number' ? first.length * perElement : 0;
}
function guarded(Target, perElement) {
  return new Proxy(Target, {
    construct(target, args, newTarget) {
      const bytes = bytesAsked(args[0], perElement);
      const large = bytes >= LARGE_BYTES;
      if (large && (overLimit || liveBytes + bytes > workerData.bufferLimitBytes)) {
        overLimit = true;
        throw new RangeError('decoded content over the limit');
      }
      const made = Reflect.construct(target, args, newTarget);
      if (large) {
        liveBytes += bytes;
        collected.register(made, bytes);
      }
      return made;
    },
  });
}
// pdfjs inflates with DecompressionStream first, whose chunks no constructor above sees: they are
// counted as they come, and the stream fails past the limit (pdfjs then inflates in JavaScript,
// through the guarded constructors).
const OriginalDecompressionStream = globalThis.DecompressionStream;
class GuardedDecompressionStream {
  constructor(format) {
    const inner = new OriginalDecompressionStream(format);
    let produced = 0;
    this.writable = inner.writable;
    this.readable = inner.readable.pipeThrough(new TransformStream({
      transform(chunk, controller) {
        produced += chunk.byteLength;
        if (liveBytes + produced > workerData.bufferLimitBytes) {
          overLimit = true;
          controller.error(new RangeError('decoded content over the limit'));
        } else controller.enqueue(chunk);
      },
    }));
  }
}
(async () => {
  if (workerData.fromSource) (await import('tsx/esm/api')).register();
  const { joinPdfPages } = await import(workerData.selfUrl);
  globalThis.ArrayBuffer = guarded(OriginalArrayBuffer, 1);
  for (const Typed of [Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array, Float32Array, Float64Array]) {
    globalThis[Typed.name] = guarded(Typed, Typed.BYTES_PER_ELEMENT);
  }
  globalThis.DecompressionStream = GuardedDecompressionStream;
  const { getDocument } = await import(workerData.pdfjsUrl);
  const task = getDocument({
    data: workerData.data,
    isEvalSupported: false,
    disableFontFace: true,
    useSystemFonts: false,
    standardFontDataUrl: workerData.fontsUrl,
    verbosity: 0,
  });
  const tooLarge = () => ({ error: 'its decoded content is over ' + workerData.bufferLimitBytes / 1048576 + ' MB', tooLarge: true });
  try {
    const document = await task.promise;
    const pages = [];
    for (let number = 1; number <= document.numPages && !overLimit; number++) {
      const page = await document.getPage(number);
      const height = page.getViewport({ scale: 1 }).height;
      const content = await page.getTextContent();
      pages.push({
        height,
        items: content.items.map((item) => [item.str || '', Boolean(item.hasEOL), item.transform ? item.transform[5] : null]),
      });
      page.cleanup();
      // A turn of the event loop, so that the buffers of pages done are counted out once collected.
      await new Promise((resolve) => setImmediate(resolve));
    }
    // pdfjs may skip a part it failed to read and go on: past the limit the document is refused all the same.
    parentPort.postMessage(overLimit ? tooLarge() : { text: joinPdfPages(pages) });
  } catch (error) {
    parentPort.postMessage(overLimit ? tooLarge() : { error: String((error && error.message) || error) });
  } finally {
    await task.destroy();
  }
})();
`;

const require = createRequire(import.meta.url);
let locations: { pdfjsUrl: string; fontsUrl: string } | undefined;
function pdfjsLocations() {
  if (!locations) {
    const root = path.dirname(require.resolve('pdfjs-dist/package.json'));
    locations = {
      pdfjsUrl: pathToFileURL(path.join(root, 'legacy', 'build', 'pdf.mjs')).href,
      fontsUrl: `${pathToFileURL(path.join(root, 'standard_fonts')).href}/`,
    };
  }
  return locations;
}

/** The module itself, which the worker imports for joinPdfPages: from sources (tests, tsx) through tsx's loader. */
const self = { selfUrl: import.meta.url, fromSource: import.meta.url.endsWith('.ts') };

/**
 * The text of a PDF (joinPdfPages of its pages), read in a worker thread. Rejects with
 * PdfReadError, `tooLarge` when its decoded streams pass `bufferLimitMb`.
 */
export async function readPdfText(
  buffer: Buffer,
  task: WorkerTaskOwner,
  limits: { timeoutMs?: number; bufferLimitMb?: number } = {},
): Promise<string> {
  const { timeoutMs = PDF_PARSE_TIMEOUT_MS, bufferLimitMb = PDF_WORKER_BUFFERS_MB } = limits;
  const data = new Uint8Array(buffer); // a copy, transferred to the worker
  const outcome = await runWorkerTask<{ text?: string; error?: string; tooLarge?: boolean }>(
    WORKER_SOURCE,
    {
      eval: true,
      workerData: { data, ...pdfjsLocations(), ...self, bufferLimitBytes: bufferLimitMb * 1024 * 1024 },
      transferList: [data.buffer],
      resourceLimits: { maxOldGenerationSizeMb: PDF_WORKER_HEAP_MB },
      stdout: true,
      stderr: true,
    },
    timeoutMs,
    task,
  );
  if ('failure' in outcome) {
    const { failure } = outcome;
    if (failure.kind === 'timeout') throw new PdfReadError(`parsing took longer than ${timeoutMs} ms`);
    throw new PdfReadError(failure.kind === 'error' ? failure.message : `the parser stopped (exit code ${failure.code})`);
  }
  const { message } = outcome;
  if (message.text === undefined) throw Object.assign(new PdfReadError(message.error ?? 'unknown error'), { tooLarge: message.tooLarge === true });
  return message.text;
}

const SENTENCE_ENDS = new Set('。？！.?!;；:：');
const CJK_OR_PUNCTUATION = /^[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\p{P}]$/u;
const WHITESPACE = /^\s$/;

/** The code point of `text` that ends at `end` (> 0). */
function codePointBefore(text: string, end: number): string {
  const unit = text.charCodeAt(end - 1);
  return unit >= 0xdc00 && unit <= 0xdfff && end > 1 ? text.slice(end - 2, end) : text.slice(end - 1, end);
}

/**
 * Text of the pages: items in the top and bottom 5% of a page (running headers, footers) are
 * dropped; a line ending in sentence punctuation (whitespace after it allowed) ends with a
 * newline, other line ends become a space (nothing after CJK text); pages are joined by newlines.
 * Only the ends of the text so far are looked at, kept as items come: testing the whole growing
 * text at every line end was quadratic (100,000 short lines of a 3 KB PDF took 20 s).
 */
export function joinPdfPages(pages: PdfPage[]): string {
  return pages
    .map(({ height, items }) => {
      const parts: string[] = [];
      // The last character of the text, and its last one that is not whitespace ('' for none yet).
      let last = '';
      let lastVisible = '';
      const append = (str: string) => {
        if (!str) return;
        parts.push(str);
        last = codePointBefore(str, str.length);
        for (let end = str.length; end > 0; ) {
          const char = codePointBefore(str, end);
          if (!WHITESPACE.test(char)) {
            lastVisible = char;
            break;
          }
          end -= char.length;
        }
      };
      for (const [str, endsLine, y] of items) {
        if (y !== null && height > 0 && (y > height * 0.95 || y < height * 0.05)) continue;
        append(str);
        if (!endsLine) continue;
        if (SENTENCE_ENDS.has(lastVisible)) append('\n');
        else if (last && !CJK_OR_PUNCTUATION.test(last) && !WHITESPACE.test(last)) append(' ');
      }
      return parts.join('').trim();
    })
    .filter(Boolean)
    .join('\n');
}
