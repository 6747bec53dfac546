/** Worker-thread entry of `htmlToMarkdownBounded`: converts one page (a file's bytes decoded first) and posts the result. */
import { parentPort, workerData } from 'node:worker_threads';
import { isAppError } from './errors.js';
import { type HtmlFileBytes, type HtmlToMarkdownOptions, htmlToMarkdown } from './html-to-markdown.js';
import { decodeText } from './text-extract.js';

const { html, options } = workerData as { html: string | HtmlFileBytes; options: HtmlToMarkdownOptions };

/** The page's text: a file's bytes (a plain Uint8Array here) decoded as extractText decodes them. */
function pageText(): string {
  if (typeof html === 'string') return html;
  return decodeText(Buffer.from(html.bytes.buffer, html.bytes.byteOffset, html.bytes.byteLength), html.filename);
}

try {
  parentPort?.postMessage({ result: htmlToMarkdown(pageText(), options) });
} catch (error) {
  parentPort?.postMessage({ error: error instanceof Error ? error.message : String(error), invalidInput: isAppError(error) });
}
