/** Worker-thread entry of large-text.ts: reads a text file's bytes (as textOfStoredFile does) or takes a text, and answers what the job wants of it. */
import { parentPort, workerData } from 'node:worker_threads';
import { textHead } from '../../../domain/text-cut.js';
import { isAppError } from '../../../infra/errors.js';
import { decodeText, extractText } from '../../../infra/text-extract.js';
import { postInPages } from '../../../infra/worker-pages.js';
import { splitSource, usableFileText } from '../collections/source-text.js';
import type { LargeTextJob } from './large-text.js';
import { previewChunks } from './preview-chunks.js';

const job = workerData as LargeTextJob;

// This thread reads text and CSV files only, which start no worker task: there is no turn to wait for.
const noWorkerTask = { owner: undefined };

async function textOf(): Promise<string> {
  if ('text' in job) return job.text;
  const { bytes, filename, contentType, raw } = job.file;
  // A Buffer arrives as a plain Uint8Array.
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return usableFileText(filename, raw ? decodeText(buffer, filename) : (await extractText({ buffer, filename, mimetype: contentType }, noWorkerTask)).text);
}

async function answer(): Promise<void> {
  const text = await textOf();
  if (job.want === 'head') return void parentPort?.postMessage({ head: textHead(text, job.chars), rawTextLength: text.length });
  if (job.want === 'preview') return void parentPort?.postMessage({ chunks: previewChunks(text, job.split) });
  const { items, ...source } = splitSource(text, job.split);
  postInPages(source, items, (item) => item.q.length);
}

answer().catch((error: unknown) => parentPort?.postMessage({ error: error instanceof Error ? error.message : String(error), invalidInput: isAppError(error) }));
