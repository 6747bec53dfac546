/** Worker-thread entry of csv-read.ts: reads one CSV file (as text-extract.ts does), or a text's Q/A rows, and posts the result. */
import { parentPort, workerData } from 'node:worker_threads';
import { isAppError } from '../../../infra/errors.js';
import { decodeText, extractText } from '../../../infra/text-extract.js';
import { csvToQa, usableFileText } from '../collections/source-text.js';
import type { CsvJob } from './csv-read.js';

const job = workerData as CsvJob;

// This thread reads text and CSV files only, which start no worker task: there is no turn to wait for.
const noWorkerTask = { owner: undefined };

async function read(): Promise<string | { q: string; a: string }[]> {
  if (job.mode === 'qaText') return csvToQa(job.text);
  // A Buffer arrives as a plain Uint8Array.
  const buffer = Buffer.from(job.bytes.buffer, job.bytes.byteOffset, job.bytes.byteLength);
  if (job.mode === 'text') return (await extractText({ buffer, filename: job.filename, mimetype: job.contentType }, noWorkerTask)).text;
  const text = job.raw ? decodeText(buffer, job.filename) : (await extractText({ buffer, filename: job.filename, mimetype: job.contentType }, noWorkerTask)).text;
  return csvToQa(usableFileText(job.filename, text));
}

read().then(
  (result) => parentPort?.postMessage({ result }),
  (error: unknown) => parentPort?.postMessage({ error: error instanceof Error ? error.message : String(error), invalidInput: isAppError(error) }),
);
