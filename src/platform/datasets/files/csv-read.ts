import { Errors } from '../../../infra/errors.js';
import { csvToQa } from '../collections/source-text.js';
import { extractText, formatOfFile } from '../../../infra/text-extract.js';
import { runWorkerTask, type WorkerTaskOwner, workerEntrySource } from '../../../infra/worker-task.js';
import type { StoredFile } from './file.repo.js';

/**
 * CSV files are read in a worker thread once they pass CSV_INLINE_MAX_BYTES: parsing a 20 MB CSV
 * took 2.4 s, 1.8 s of it blocking the event loop, and +431 MB (a 100 MB upload, the default
 * limit, about five times that). The worker has a time limit and a heap limit (a 60 MB CSV fits
 * in it); past either the file is refused with a 400 asking to split it, instead of the process
 * stalling or running out of memory. Same text, rows and errors as reading it inline.
 */
export const CSV_INLINE_MAX_BYTES = 256 * 1024;
/** An extracted text parsed as Q/A rows inline up to this many characters (as a CSV file's bytes). */
export const QA_TEXT_INLINE_MAX_CHARS = CSV_INLINE_MAX_BYTES;
export const CSV_READ_TIMEOUT_MS = 60_000;
const CSV_WORKER_HEAP_MB = 512;

/**
 * What a CSV worker reads: a file's import Markdown text, or its Q/A rows (`raw`: the CSV text as
 * it is, else the extracted text); or the Q/A rows of a text already extracted (`qaText`).
 */
export type CsvJob = ({ bytes: Uint8Array; filename: string; contentType: string } & ({ mode: 'text' } | { mode: 'qa'; raw: boolean })) | { mode: 'qaText'; text: string };

/** The formats text-extract.ts reads by decoding alone (text or Markdown, CSV), as it names a file's format. */
export function decodedFormatOf(file: Pick<StoredFile, 'filename' | 'contentType'>): 'text' | 'csv' | undefined {
  const format = formatOfFile(file.filename, file.contentType);
  return format === 'txt' || format === 'md' ? 'text' : format === 'csv' ? 'csv' : undefined;
}

/** Reads a CSV file in a worker thread (csv-read-worker.ts) for `task.owner`: its Markdown text, or its Q/A rows. */
export async function readCsvInWorker(job: CsvJob & { mode: 'text' }, task: WorkerTaskOwner): Promise<string>;
export async function readCsvInWorker(job: CsvJob & { mode: 'qa' | 'qaText' }, task: WorkerTaskOwner): Promise<{ q: string; a: string }[]>;
export async function readCsvInWorker(job: CsvJob, task: WorkerTaskOwner): Promise<string | { q: string; a: string }[]> {
  const name = job.mode === 'qaText' ? 'the text as CSV' : `the CSV file '${job.filename}'`;
  const refused = (why: string) => Errors.missingParams(`Cannot read ${name} (${why}); split it into smaller files`);
  const outcome = await runWorkerTask<{ result?: string | { q: string; a: string }[]; error?: string; invalidInput?: boolean }>(
    workerEntrySource(import.meta.url, './csv-read-worker'),
    { eval: true, workerData: job, resourceLimits: { maxOldGenerationSizeMb: CSV_WORKER_HEAP_MB } },
    CSV_READ_TIMEOUT_MS,
    task,
  );
  if ('failure' in outcome) {
    const { failure } = outcome;
    if (failure.kind === 'timeout') throw refused(`reading took longer than ${CSV_READ_TIMEOUT_MS / 1000} s`);
    throw refused(failure.kind === 'error' ? failure.message : `the reader stopped, exit code ${failure.code}`);
  }
  const { message } = outcome;
  if (message.result !== undefined) return message.result;
  throw message.invalidInput ? Errors.missingParams(message.error ?? 'invalid input') : refused(message.error ?? 'unknown error');
}

/**
 * extractText's text, with a CSV file past CSV_INLINE_MAX_BYTES parsed in the CSV worker: the
 * readFiles node (any file a question links) reads files this way, and the dataset imports the
 * files the large-text worker does not read (large-text.ts).
 */
export async function extractTextOffThread(file: { buffer: Buffer; filename: string; mimetype?: string }, task: WorkerTaskOwner): Promise<string> {
  const { buffer, filename, mimetype = '' } = file;
  if (decodedFormatOf({ filename, contentType: mimetype }) === 'csv' && buffer.length > CSV_INLINE_MAX_BYTES) {
    return readCsvInWorker({ mode: 'text', bytes: buffer, filename, contentType: mimetype }, task);
  }
  return (await extractText(file, task)).text;
}

/**
 * csvToQa of an extracted text (a page, PDF or docx read as Q/A): past QA_TEXT_INLINE_MAX_CHARS
 * in the CSV worker (5 MB of prose parsed inline held the loop 4 s).
 */
export async function qaOfText(text: string, task: WorkerTaskOwner): Promise<{ q: string; a: string }[]> {
  if (text.length <= QA_TEXT_INLINE_MAX_CHARS) return csvToQa(text);
  return readCsvInWorker({ mode: 'qaText', text }, task);
}
