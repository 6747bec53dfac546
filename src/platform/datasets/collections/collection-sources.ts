import { Errors, isAppError } from '../../../infra/errors.js';
import { htmlToMarkdownBounded } from '../../../infra/html-to-markdown.js';
import { urlForMessage } from '../../../infra/join-url.js';
import { safeFetch } from '../../../infra/outbound-fetch.js';
import { decodeText } from '../../../infra/text-extract.js';
import type { WorkerTaskOwner } from '../../../infra/worker-task.js';
import type { AuthContext } from '../../auth/types.js';
import type { DatasetsContext } from '../context.js';
import type { StoredFile } from '../files/file.repo.js';
import { CSV_INLINE_MAX_BYTES, decodedFormatOf, extractTextOffThread, qaOfText, readCsvInWorker } from '../files/csv-read.js';
import { usableFileText, withoutNul } from './source-text.js';

export { csvToQa, hashText, qaFromRows, qaItemsOf, withoutNul } from './source-text.js';

/** The CSS selector a link collection's metadata names, if it is text (metadata is user data). */
export const pageSelectorOf = (metadata: Record<string, unknown> | undefined): string | undefined =>
  typeof metadata?.webPageSelector === 'string' ? metadata.webPageSelector : undefined;

/**
 * Fetches a web page through the SSRF guard and turns the selected part into Markdown, for
 * `task.owner` (the team; a page converted in a worker waits for its turn).
 */
export async function readLink(ctx: DatasetsContext, url: string, selector: string | undefined, task: WorkerTaskOwner): Promise<{ title: string; text: string; selector: string }> {
  let response: Awaited<ReturnType<typeof safeFetch>>;
  try {
    response = await safeFetch(url, {
      timeoutMs: ctx.config.OUTBOUND_TIMEOUT_MS,
      maxBytes: ctx.config.OUTBOUND_MAX_BYTES,
      allowPrivate: ctx.config.SSRF_ALLOW_PRIVATE,
      signal: task.signal,
    });
  } catch (error) {
    // Unreachable, slow or refused links are the caller's input problem: a 400 naming the link.
    if (isAppError(error)) throw Errors.missingParams(`Invalid field 'link': ${urlForMessage(url)} could not be fetched (${error.message})`);
    throw error;
  }
  // Named without its query: links may carry tokens there (`?access_token=`), and messages reach the logs.
  if (response.status >= 400) throw Errors.missingParams(`Invalid field 'link': ${urlForMessage(url)} answered HTTP ${response.status}`);
  const used = selector?.trim() || 'body';
  const { title, markdown } = await htmlToMarkdownBounded(
    response.text(),
    { selector: used, baseUrl: response.finalUrl },
    { field: selector?.trim() ? 'selector' : 'link', owner: task.owner, signal: task.signal },
  );
  return { title: withoutNul(title || url), text: withoutNul(markdown).trim(), selector: used };
}

/** readLink of one link for a team, once the team's earlier link reads leave room (files/link-read-turns.ts). */
export function readLinkInTurn(ctx: DatasetsContext, url: string, selector: string | undefined, teamId: string): Promise<{ title: string; text: string; selector: string }> {
  return ctx.linkReads.inTurn(teamId, 1, () => readLink(ctx, url, selector, { owner: teamId }));
}

/**
 * An uploaded dataset file the caller may build a collection from: 404 when there is none, 403
 * when it is another team's, or a teammate's (a collection's file is read through the collection,
 * so attaching someone else's upload would hand its contents to whoever reads the collection; the
 * team owner may use any of the team's files). `uploaderOnly`: the uploader alone (previews).
 */
export async function findUsableFile(ctx: DatasetsContext, auth: AuthContext, fileId: string, options: { uploaderOnly?: boolean } = {}): Promise<StoredFile> {
  const file = await ctx.repos.files.find('dataset', fileId);
  if (!file) throw Errors.fileNotFound(`File ${fileId} not found`);
  if (file.metadata.teamId !== auth.teamId) throw Errors.unAuthFile(`File ${fileId} belongs to another team`);
  const uploader = file.metadata.tmbId === auth.tmbId;
  if (!uploader && (options.uploaderOnly || auth.role !== 'owner')) throw Errors.unAuthFile(`Only the uploader may use file ${fileId}`);
  return file;
}

/** An uploaded file the caller may use (findUsableFile) and its bytes: what every reader of a file's content starts from. */
export async function readUsableFile(ctx: DatasetsContext, auth: AuthContext, fileId: string, options: { uploaderOnly?: boolean } = {}): Promise<{ file: StoredFile; buffer: Buffer }> {
  const file = await findUsableFile(ctx, auth, fileId, options);
  return { file, buffer: await ctx.repos.files.readBuffer('dataset', fileId) };
}

/** Whether a file is read as raw CSV text when `raw` is asked (the Q/A import and its preview). */
export const isRawCsv = (file: Pick<StoredFile, 'filename'>, raw: boolean | undefined): boolean => Boolean(raw) && file.filename.toLowerCase().endsWith('.csv');

/**
 * A stored file is converted for the team that stored it (its callers have checked that it is
 * the caller's, findUsableFile), so every path from a file to its text names that team.
 */
export const fileTask = (file: Pick<StoredFile, 'metadata'>): WorkerTaskOwner => ({ owner: file.metadata.teamId });

/**
 * The text of a stored file's bytes: 400 when it has none. A CSV file past
 * CSV_INLINE_MAX_BYTES is parsed in a worker thread (files/csv-read.ts).
 */
export async function textOfStoredFile(file: Pick<StoredFile, 'filename' | 'contentType' | 'metadata'>, buffer: Buffer, raw?: boolean): Promise<string> {
  const { filename, contentType } = file;
  // CSV for Q/A import is read as it is; otherwise the parser's Markdown rendering is used.
  return usableFileText(
    filename,
    isRawCsv(file, raw) ? decodeText(buffer, filename) : await extractTextOffThread({ buffer, filename, mimetype: contentType }, fileTask(file)),
  );
}

/**
 * The Q/A rows of an uploaded file the caller may use (the CSV import): csvToQa of its raw text
 * (a .csv) or of its extracted text; a text or CSV file past CSV_INLINE_MAX_BYTES is read and
 * parsed in a worker thread (files/csv-read.ts), and so is an extracted text past QA_TEXT_INLINE_MAX_CHARS.
 */
export async function readStoredQa(ctx: DatasetsContext, auth: AuthContext, fileId: string): Promise<{ file: StoredFile; rows: { q: string; a: string }[] }> {
  const { file, buffer } = await readUsableFile(ctx, auth, fileId);
  return { file, rows: await qaOfStoredFile(file, buffer) };
}

/** The Q/A rows of a stored file's bytes (readStoredQa, and Q/A previews its beginning does not settle). */
export async function qaOfStoredFile(file: Pick<StoredFile, 'filename' | 'contentType' | 'metadata'>, buffer: Buffer): Promise<{ q: string; a: string }[]> {
  if (decodedFormatOf(file) && buffer.length > CSV_INLINE_MAX_BYTES) {
    return readCsvInWorker({ mode: 'qa', raw: isRawCsv(file, true), bytes: buffer, filename: file.filename, contentType: file.contentType }, fileTask(file));
  }
  return qaOfText(await textOfStoredFile(file, buffer, true), fileTask(file));
}
