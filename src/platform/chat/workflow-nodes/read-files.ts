/** The readFiles node: the text of the documents a question links. */
import { textHead } from '../../../domain/text-cut.js';
import { valuesFileUrls } from '../../../domain/workflow/chat-values.js';
import type { NodeRunner } from '../../../domain/workflow/types.js';
import { type ExtractionTask, formatOfFile } from '../../../infra/text-extract.js';
import { extractTextOffThread } from '../../datasets/index.js';
import { untilCut } from './call-cut.js';
import { distinctFileLinks, fileExtensionOf, fileNameOf } from './file-links.js';
import type { NodeDeps } from './node-deps.js';
import { textFileHead } from './text-file-head.js';

/** Files one run reads: the first ones (the reference's default `maxFiles`). */
const READ_FILES_MAX_FILES = 20;
/**
 * The node's text, its files together: more than a model's context takes, and what a following
 * node may fill into its texts (interpolate.ts) besides its own.
 */
const READ_FILES_MAX_CHARS = 1_000_000;
/** Bytes one run downloads, its files together: two uploads at the default UPLOAD_LIMIT_BYTES. */
const READ_FILES_MAX_BYTES = 200 * 1024 * 1024;
/** Text and Markdown files past this size are decoded a slice at a time, only as far as the node keeps. */
const TEXT_INLINE_MAX_BYTES = 256 * 1024;
const IMAGE_EXTENSIONS = new Set(['jpg', 'jpeg', 'png', 'gif', 'bmp', 'webp', 'svg', 'ico', 'tif', 'tiff', 'heic', 'avif']);
/** How much of each file the run detail shows. */
const PREVIEW_CHARS = 100;
const SEPARATOR = '\n******\n';
const CUT_NOTE = `[The text is cut here: readFiles keeps at most ${READ_FILES_MAX_CHARS} characters of its files]`;
const NO_CHARS_LEFT = `[Not read: readFiles keeps at most ${READ_FILES_MAX_CHARS} characters of its files, and the files before this one took them]`;
const NO_BYTES_LEFT = `The file was not read: readFiles downloads at most ${READ_FILES_MAX_BYTES} bytes of files, and the files before this one took them`;

/** A link naming a document: its file name has an extension that is not an image's. */
function isDocumentLink(url: string): boolean {
  if (url.startsWith('data:')) return false;
  const extension = fileExtensionOf(url);
  return extension !== '' && !IMAGE_EXTENSIONS.has(extension);
}

const filePart = (name: string, content: string) => `File: ${name}\n<Content>\n${content}\n</Content>`;
const previewOf = (content: string) => (content.length > PREVIEW_CHARS ? `${textHead(content, PREVIEW_CHARS)}......` : content);

/** What one run may still download and keep. */
interface ReadBudget {
  bytes: number;
  chars: number;
}

/** A file's text: at least `budget.chars` characters of it when it has that many, and whether that is all of it. */
async function fileText(deps: NodeDeps, url: string, name: string, budget: ReadBudget): Promise<{ text: string; whole: boolean }> {
  // The download and the extraction end with the turn (call-cut.ts): a cut file reads as one that could not be read.
  const file = await untilCut(deps.signal, (signal) => deps.download(url, budget.bytes, signal));
  budget.bytes -= file.buffer.length;
  const format = formatOfFile(name, file.contentType);
  if ((format === 'txt' || format === 'md') && file.buffer.length > TEXT_INLINE_MAX_BYTES) return textFileHead(file.buffer, name, budget.chars);
  const text = await untilCut(deps.signal, (signal) => {
    // Handed the signal, the extraction starts no conversion once the turn ended.
    const task: ExtractionTask = { owner: deps.teamId, signal };
    return extractTextOffThread({ buffer: file.buffer, filename: name, mimetype: file.contentType }, task);
  });
  return { text, whole: true };
}

export function createReadFilesRunner(deps: NodeDeps): NodeRunner {
  /**
   * The node's own files first, then those of earlier questions, documents only (a link whose
   * name has no extension or an image's is left out), each file once however its links spell it,
   * the first 20, as the reference reads them. One run downloads and keeps a bounded amount: its
   * text is cut where the characters run out, ending with a note saying so, and later files are
   * not read (their detail says why).
   */
  return async ({ params, histories }) => {
    const fromInput = Array.isArray(params.fileUrlList) ? params.fileUrlList.filter((u): u is string => typeof u === 'string') : [];
    const fromHistory = histories.filter((item) => item.obj === 'Human').flatMap((item) => valuesFileUrls(item.value));
    const urls = distinctFileLinks([...fromInput, ...fromHistory].filter(isDocumentLink)).slice(0, READ_FILES_MAX_FILES);
    const budget: ReadBudget = { bytes: READ_FILES_MAX_BYTES, chars: READ_FILES_MAX_CHARS };
    const read: { url: string; name: string }[] = [];
    const parts: string[] = [];
    const previews: string[] = [];
    let cut = false;
    for (const url of urls) {
      const name = fileNameOf(url);
      read.push({ url, name });
      if (cut) {
        previews.push(filePart(name, NO_CHARS_LEFT));
        continue;
      }
      let content = NO_BYTES_LEFT;
      if (budget.bytes > 0) {
        try {
          const { text, whole } = await fileText(deps, url, name, budget);
          cut = !whole || text.length > budget.chars;
          content = textHead(text, budget.chars);
        } catch (error) {
          content = `The file could not be read: ${(error as Error).message}`;
        }
      }
      const part = filePart(name, content);
      parts.push(part);
      budget.chars -= part.length + SEPARATOR.length;
      cut ||= budget.chars <= 0;
      previews.push(filePart(name, `${previewOf(content)}${cut ? `\n${CUT_NOTE}` : ''}`));
    }
    const joined = parts.join(SEPARATOR);
    const text = cut || joined.length > READ_FILES_MAX_CHARS ? `${textHead(joined, READ_FILES_MAX_CHARS - CUT_NOTE.length - 1)}\n${CUT_NOTE}` : joined;
    return { outputs: { system_text: text }, responseData: { readFiles: read, readFilesResult: previews.join(SEPARATOR) }, toolResponses: { fileContent: text } };
  };
}
