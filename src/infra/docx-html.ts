/**
 * .docx → HTML with mammoth, within limits. A .docx is a zip archive: it is unpacked by
 * `toStoredZip` (entry count and declared sizes checked before inflating, each entry inflated
 * under its declared size), then mammoth reads the unpacked copy in a worker thread with time and
 * heap limits, so a document that expands enormously (a million empty paragraphs fit in 10 KB)
 * neither blocks the event loop nor exhausts the process's memory.
 */
import { createRequire } from 'node:module';
import { runWorkerTask, type WorkerTaskOwner } from './worker-task.js';
import { toStoredZip, type ZipLimits } from './zip-archive.js';

export class DocxReadError extends Error {
  override name = 'DocxReadError';
}

const MB = 2 ** 20;
const DOCX_ZIP_LIMITS: ZipLimits = { maxEntries: 5_000, maxEntryBytes: 50 * MB, maxTotalBytes: 200 * MB };
const DOCX_CONVERT_TIMEOUT_MS = 30_000;
const DOCX_WORKER_HEAP_MB = 512;

// Plain JavaScript run by the worker (eval), so it works the same from sources and from dist.
// Embedded images are not imported (they would become base64 data URIs in the text).
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const mammoth = require(workerData.mammothPath);
const buffer = Buffer.from(workerData.data.buffer, workerData.data.byteOffset, workerData.data.byteLength);
mammoth
  .convertToHtml({ buffer }, { convertImage: mammoth.images.imgElement(async () => ({ src: '' })) })
  .then(
    (result) => parentPort.postMessage({ html: result.value }),
    (error) => parentPort.postMessage({ error: String((error && error.message) || error) }),
  );
`;

let mammothPath: string | undefined;

/**
 * The document's HTML as mammoth renders it. Rejects with ZipArchiveError (the archive) or
 * DocxReadError. `heapMb` bounds the reader's heap (tests reach it with a smaller document).
 */
export async function readDocxHtml(buffer: Buffer, task: WorkerTaskOwner, timeoutMs = DOCX_CONVERT_TIMEOUT_MS, heapMb = DOCX_WORKER_HEAP_MB): Promise<string> {
  const data = await toStoredZip(buffer, DOCX_ZIP_LIMITS);
  mammothPath ??= createRequire(import.meta.url).resolve('mammoth');
  const outcome = await runWorkerTask<{ html?: string; error?: string }>(
    WORKER_SOURCE,
    { eval: true, workerData: { data, mammothPath }, transferList: [data.buffer], resourceLimits: { maxOldGenerationSizeMb: heapMb } },
    timeoutMs,
    task,
  );
  if ('failure' in outcome) {
    const { failure } = outcome;
    if (failure.kind === 'timeout') throw new DocxReadError(`reading took longer than ${timeoutMs} ms`);
    throw new DocxReadError(failure.kind === 'error' ? failure.message : `the reader stopped (exit code ${failure.code})`);
  }
  if (outcome.message.html === undefined) throw new DocxReadError(outcome.message.error ?? 'unknown error');
  return outcome.message.html;
}
