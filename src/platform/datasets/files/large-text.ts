import { textHead } from '../../../domain/text-cut.js';
import { Errors } from '../../../infra/errors.js';
import { runPagedWorkerTask, type WorkerTaskOwner, workerEntrySource } from '../../../infra/worker-task.js';
import { fileTask, isRawCsv, textOfStoredFile } from '../collections/collection-sources.js';
import { type SplitSettings, type SplitSource, splitSource } from '../collections/source-text.js';
import { decodedFormatOf } from './csv-read.js';
import type { StoredFile } from './file.repo.js';
import { type PreviewSplitOptions, previewChunks } from './preview-chunks.js';

/**
 * Texts past TEXT_INLINE_MAX_CHARS characters (text files past TEXT_FILE_INLINE_MAX_BYTES) are read, split and hashed
 * in a worker thread (large-text-worker.ts): inline, a 100 MB .txt held the event loop 2.5 s
 * (decode 0.4 s, split 1.1–1.7 s, sha256 0.1 s). What stays inline is split in tens of ms, up to
 * ~120 ms for the worst text measured (256 K characters of `a, ` at chunk size 100), about the
 * worker's start; the CSV worker starts at the same size (HTML pages go to theirs far sooner). A text file's bytes go to the
 * worker, which decodes them as textOfStoredFile does: its text never reaches this thread, only
 * its chunks, a page at a time (worker-pages.ts). Same chunks, hash and errors as inline
 * (test/integration/datasets-large-text.test.ts).
 */
export const TEXT_INLINE_MAX_CHARS = 256 * 1024;
/** A text file's bytes decode to at most as many characters: the same bound, measured before decoding. */
export const TEXT_FILE_INLINE_MAX_BYTES = TEXT_INLINE_MAX_CHARS;
export const LARGE_TEXT_TIMEOUT_MS = 60_000;
/** A 100 MB text file (the default upload limit) split at chunk size 100 peaks at ~600 MB of heap. */
const LARGE_TEXT_HEAP_MB = 1024;

type SourceChunk = SplitSource['items'][number];
/** A file's bytes (`raw`: a CSV read as it is, not as a Markdown table), or a text. */
type Source = { file: { bytes: Uint8Array; filename: string; contentType: string; raw: boolean } } | { text: string };
/** What the worker answers: the chunks of the text (with its hash and length), its head, or a preview's first chunks. */
type Want = { want: 'chunks'; split: SplitSettings } | { want: 'head'; chars: number } | { want: 'preview'; split: PreviewSplitOptions };
export type LargeTextJob = Source & Want;
/** The worker's answer: the fields of what was wanted (the chunks in pages), or why it failed. */
type LargeTextAnswer = {
  items?: SourceChunk[];
  more?: boolean;
  hashRawText?: string;
  rawTextLength?: number;
  head?: string;
  chunks?: string[];
  error?: string;
  invalidInput?: boolean;
};

/**
 * Runs a job in the worker for `task.owner`. A file's bytes are handed over, not copied, when the
 * Buffer is the whole of its memory (a file read from storage is): the caller must not use it after.
 */
async function inWorker(job: LargeTextJob, task: WorkerTaskOwner): Promise<{ answer: LargeTextAnswer; items: SourceChunk[] }> {
  const bytes = 'file' in job ? job.file.bytes : undefined;
  const handOver = bytes && bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer;
  const name = 'file' in job ? `the file '${job.file.filename}'` : 'the text';
  const refused = (why: string) => Errors.missingParams(`Cannot read ${name} (${why}); split it into smaller files`);
  const outcome = await runPagedWorkerTask<LargeTextAnswer, SourceChunk>(
    workerEntrySource(import.meta.url, './large-text-worker'),
    { eval: true, workerData: job, transferList: handOver ? [bytes.buffer as ArrayBuffer] : [], resourceLimits: { maxOldGenerationSizeMb: LARGE_TEXT_HEAP_MB } },
    LARGE_TEXT_TIMEOUT_MS,
    task,
  );
  if ('failure' in outcome) {
    const { failure } = outcome;
    if (failure.kind === 'timeout') throw refused(`reading took longer than ${LARGE_TEXT_TIMEOUT_MS / 1000} s`);
    throw refused(failure.kind === 'error' ? failure.message : `the reader stopped, exit code ${failure.code}`);
  }
  const { message } = outcome;
  if (message.error === undefined) return { answer: message, items: outcome.items };
  throw message.invalidInput ? Errors.missingParams(message.error) : refused(message.error);
}

/** A source's chunks, hash and length, split in the worker (the chunks come in pages). */
async function splitInWorker(source: Source, split: SplitSettings, task: WorkerTaskOwner): Promise<SplitSource> {
  const { answer, items } = await inWorker({ ...source, want: 'chunks', split }, task);
  return { items, hashRawText: answer.hashRawText!, rawTextLength: answer.rawTextLength! };
}

/** A stored file's bytes as the worker reads them: only text and CSV files past TEXT_FILE_INLINE_MAX_BYTES, which it decodes itself. */
function largeTextFile(file: Pick<StoredFile, 'filename' | 'contentType'>, buffer: Buffer, raw = false): Source | undefined {
  if (!decodedFormatOf(file) || buffer.length <= TEXT_FILE_INLINE_MAX_BYTES) return undefined;
  return { file: { bytes: buffer, filename: file.filename, contentType: file.contentType, raw: isRawCsv(file, raw) } };
}

/** A text's chunks as an import queues them, with its hash and length: in the worker past TEXT_INLINE_MAX_CHARS. */
export async function splitSourceText(text: string, split: SplitSettings, task: WorkerTaskOwner): Promise<SplitSource> {
  return text.length > TEXT_INLINE_MAX_CHARS ? splitInWorker({ text }, split, task) : splitSource(text, split);
}

/**
 * A stored file's chunks, hash and length (textOfStoredFile's text, split): a large text or CSV file
 * is read and split in the worker (the buffer is handed over); other formats are extracted as
 * before (PDF, docx and HTML in their workers), then split by splitSourceText.
 */
export async function splitStoredFile(file: Pick<StoredFile, 'filename' | 'contentType' | 'metadata'>, buffer: Buffer, split: SplitSettings): Promise<SplitSource> {
  const large = largeTextFile(file, buffer);
  if (large) return splitInWorker(large, split, fileTask(file));
  return splitSourceText(await textOfStoredFile(file, buffer), split, fileTask(file));
}

/** The first `chars` characters of a stored file's text and its length (previewContent); `raw` as textOfStoredFile's. */
export async function headOfStoredFile(
  file: Pick<StoredFile, 'filename' | 'contentType' | 'metadata'>,
  buffer: Buffer,
  raw: boolean | undefined,
  chars: number,
): Promise<{ head: string; length: number }> {
  const large = largeTextFile(file, buffer, raw);
  if (large) {
    const { answer } = await inWorker({ ...large, want: 'head', chars }, fileTask(file));
    return { head: answer.head!, length: answer.rawTextLength! };
  }
  const text = await textOfStoredFile(file, buffer, raw);
  return { head: textHead(text, chars), length: text.length };
}

/** previewChunks of a text: in the worker past TEXT_INLINE_MAX_CHARS (a prefix usually settles it, but a long code block makes it split the whole). */
export async function previewChunksOfText(text: string, options: PreviewSplitOptions, task: WorkerTaskOwner): Promise<string[]> {
  if (text.length <= TEXT_INLINE_MAX_CHARS) return previewChunks(text, options);
  return (await inWorker({ text, want: 'preview', split: options }, task)).answer.chunks!;
}

/** previewChunks of a stored file's whole text (its beginning settled nothing): a large text or CSV file is read in the worker. */
export async function previewChunksOfStoredFile(file: Pick<StoredFile, 'filename' | 'contentType' | 'metadata'>, buffer: Buffer, options: PreviewSplitOptions): Promise<string[]> {
  const large = largeTextFile(file, buffer);
  if (large) return (await inWorker({ ...large, want: 'preview', split: options }, fileTask(file))).answer.chunks!;
  return previewChunksOfText(await textOfStoredFile(file, buffer), options, fileTask(file));
}
