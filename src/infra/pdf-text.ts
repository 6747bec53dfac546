/**
 * PDF → text with pdfjs-dist, parsed in a worker thread so a large or hostile PDF neither
 * blocks the event loop nor runs forever (time and heap limits). The worker only collects
 * text items; `joinPdfPages` (pure) turns them into text by the reference's rules.
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

// Plain JavaScript run by the worker (eval), so it works the same from sources and from dist.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
(async () => {
  const { getDocument } = await import(workerData.pdfjsUrl);
  const task = getDocument({
    data: workerData.data,
    isEvalSupported: false,
    disableFontFace: true,
    useSystemFonts: false,
    standardFontDataUrl: workerData.fontsUrl,
    verbosity: 0,
  });
  try {
    const document = await task.promise;
    const pages = [];
    for (let number = 1; number <= document.numPages; number++) {
      const page = await document.getPage(number);
      const height = page.getViewport({ scale: 1 }).height;
      const content = await page.getTextContent();
      pages.push({
        height,
        items: content.items.map((item) => [item.str || '', Boolean(item.hasEOL), item.transform ? item.transform[5] : null]),
      });
      page.cleanup();
    }
    parentPort.postMessage({ pages });
  } catch (error) {
    parentPort.postMessage({ error: String((error && error.message) || error) });
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

/** The text items of every page, read in a worker thread. Rejects with PdfReadError. */
export async function readPdfPages(buffer: Buffer, task: WorkerTaskOwner, timeoutMs = PDF_PARSE_TIMEOUT_MS): Promise<PdfPage[]> {
  const data = new Uint8Array(buffer); // a copy, transferred to the worker
  const outcome = await runWorkerTask<{ pages?: PdfPage[]; error?: string }>(
    WORKER_SOURCE,
    { eval: true, workerData: { data, ...pdfjsLocations() }, transferList: [data.buffer], resourceLimits: { maxOldGenerationSizeMb: PDF_WORKER_HEAP_MB }, stdout: true, stderr: true },
    timeoutMs,
    task,
  );
  if ('failure' in outcome) {
    const { failure } = outcome;
    if (failure.kind === 'timeout') throw new PdfReadError(`parsing took longer than ${timeoutMs} ms`);
    throw new PdfReadError(failure.kind === 'error' ? failure.message : `the parser stopped (exit code ${failure.code})`);
  }
  if (!outcome.message.pages) throw new PdfReadError(outcome.message.error ?? 'unknown error');
  return outcome.message.pages;
}

const SENTENCE_END = /[。？！.?!;；:：]\s*$/;
const CJK_OR_PUNCTUATION_END = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\p{P}]$/u;

/**
 * Text of the pages: items in the top and bottom 5% of a page (running headers, footers) are
 * dropped; a line ending in sentence punctuation ends with a newline, other line ends become a
 * space (nothing after CJK text); pages are joined by newlines.
 */
export function joinPdfPages(pages: PdfPage[]): string {
  return pages
    .map(({ height, items }) => {
      let text = '';
      for (const [str, endsLine, y] of items) {
        if (y !== null && height > 0 && (y > height * 0.95 || y < height * 0.05)) continue;
        text += str;
        if (!endsLine) continue;
        if (SENTENCE_END.test(text)) text += '\n';
        else if (!CJK_OR_PUNCTUATION_END.test(text) && !/\s$/.test(text) && text) text += ' ';
      }
      return text.trim();
    })
    .filter(Boolean)
    .join('\n');
}
