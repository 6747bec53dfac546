/** The code, readFiles and customFeedback node runners. */
import { textHead } from '../../../domain/text-cut.js';
import { valuesFileUrls } from '../../../domain/workflow/chat-values.js';
import { dynamicParams } from '../../../domain/workflow/interpolate.js';
import type { NodeRunner } from '../../../domain/workflow/types.js';
import { extractTextOffThread } from '../../datasets/index.js';
import { fileExtensionOf, fileNameOf } from './file-links.js';
import { failureDetail, statusFailure } from './http-failure.js';
import type { NodeDeps } from './node-deps.js';

/** Files one run reads: the first ones (the reference's default `maxFiles`). */
const MAX_FILES = 20;
const IMAGE_EXTENSIONS = new Set(['jpg', 'jpeg', 'png', 'gif', 'bmp', 'webp', 'svg', 'ico', 'tif', 'tiff', 'heic', 'avif']);
/** How much of each file the run detail shows. */
const PREVIEW_CHARS = 100;

type SandboxAnswer = { success?: boolean; data?: { codeReturn?: Record<string, unknown>; log?: string }; message?: string };

/** The sandbox's JSON answer, or undefined when it is not JSON (a proxy's error page). */
function parseSandboxAnswer(text: string): SandboxAnswer | undefined {
  try {
    const parsed = JSON.parse(text) as unknown;
    return typeof parsed === 'object' && parsed !== null ? (parsed as SandboxAnswer) : undefined;
  } catch {
    return undefined;
  }
}

/** A link naming a document: its file name has an extension that is not an image's. */
function isDocumentLink(url: string): boolean {
  if (url.startsWith('data:')) return false;
  const extension = fileExtensionOf(url);
  return extension !== '' && !IMAGE_EXTENSIONS.has(extension);
}

export function createExtraRunners(deps: NodeDeps): Record<string, NodeRunner> {
  const code: NodeRunner = async ({ params, node }) => {
    const variables = dynamicParams(node, params);
    const source = String(params.code ?? '');
    if (!deps.runSandbox) {
      // As the reference: the error output only (a text), no run-detail entry.
      return { outputs: { error: 'Can not find SANDBOX_URL in env' } };
    }
    try {
      const response = await deps.runSandbox(JSON.stringify({ code: source, variables }));
      const body = parseSandboxAnswer(response.text);
      if (response.status >= 400) throw statusFailure(response.status, body);
      if (!body?.success || typeof body.data?.codeReturn !== 'object' || body.data.codeReturn === null) throw Object.assign(new Error('Run code failed'), { data: body });
      const returned = body.data.codeReturn;
      return { outputs: { ...returned, system_rawResponse: returned }, responseData: { customInputs: variables, customOutputs: returned, codeLog: body.data.log ?? '' }, toolResponses: returned };
    } catch (error) {
      // The error output is an object, as the reference's (message, data, name, method, code, status).
      const detail = failureDetail(error, 'post');
      return { outputs: { error: detail }, responseData: { customInputs: variables, customOutputs: {}, codeLog: '', error: detail } };
    }
  };

  /**
   * The node's own files first, then those of earlier questions, documents only (a link whose
   * name has no extension or an image's is left out), the first 20, as the reference reads them.
   */
  const readFiles: NodeRunner = async ({ params, histories }) => {
    const fromInput = Array.isArray(params.fileUrlList) ? params.fileUrlList.filter((u): u is string => typeof u === 'string') : [];
    const fromHistory = histories.filter((item) => item.obj === 'Human').flatMap((item) => valuesFileUrls(item.value));
    const urls = [...new Set([...fromInput, ...fromHistory])].filter(isDocumentLink).slice(0, MAX_FILES);
    const read: { url: string; name: string }[] = [];
    const parts: string[] = [];
    const previews: string[] = [];
    for (const url of urls) {
      const name = fileNameOf(url);
      read.push({ url, name });
      let content: string;
      try {
        const file = await deps.download(url);
        content = await extractTextOffThread({ buffer: file.buffer, filename: name, mimetype: file.contentType }, { owner: deps.teamId });
      } catch (error) {
        content = `The file could not be read: ${(error as Error).message}`;
      }
      parts.push(`File: ${name}\n<Content>\n${content}\n</Content>`);
      const preview = content.length > PREVIEW_CHARS ? `${textHead(content, PREVIEW_CHARS)}......` : content;
      previews.push(`File: ${name}\n<Content>\n${preview}\n</Content>`);
    }
    const text = parts.join('\n******\n');
    return { outputs: { system_text: text }, responseData: { readFiles: read, readFilesResult: previews.join('\n******\n') }, toolResponses: { fileContent: text } };
  };

  /** The reference appends the text 60 s later; here it is saved with the AI item of this turn. */
  const customFeedback: NodeRunner = async ({ params, emit }) => {
    const text = String(params.system_textareaInput ?? '');
    if (!deps.chatId || !deps.responseChatItemId) emit({ event: 'fastAnswer', text: `\n\n[Custom feedback (not saved: no chatId)] ${text}` });
    else if (text) deps.customFeedbacks.push(text);
    return { responseData: { textOutput: text } };
  };

  return { code, readFiles, customFeedback };
}
