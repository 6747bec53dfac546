/** Worker-thread entry of `htmlToMarkdownBounded`: converts one page and posts the result. */
import { parentPort, workerData } from 'node:worker_threads';
import { isAppError } from './errors.js';
import { type HtmlToMarkdownOptions, htmlToMarkdown } from './html-to-markdown.js';

const { html, options } = workerData as { html: string; options: HtmlToMarkdownOptions };
try {
  parentPort?.postMessage({ result: htmlToMarkdown(html, options) });
} catch (error) {
  parentPort?.postMessage({ error: error instanceof Error ? error.message : String(error), invalidInput: isAppError(error) });
}
