/** The code, readFiles and customFeedback node runners. */
import { valuesFileUrls } from '../../../domain/workflow/chat-values.js';
import { dynamicParams } from '../../../domain/workflow/interpolate.js';
import type { NodeRunner } from '../../../domain/workflow/types.js';
import { extractText } from '../../../infra/text-extract.js';
import { failureDetail, statusFailure } from './http-failure.js';
import type { NodeDeps } from './node-deps.js';
import { joinUrl } from '../../../infra/join-url.js';

const MAX_FILES = 20;

/**
 * A file's name from its link: this service's links name it in a `filename` parameter, others
 * end with it. A link that does not parse (a client sent it) is named by its text.
 */
function fileNameOf(url: string): string {
  try {
    const parsed = new URL(url, 'http://local');
    return parsed.searchParams.get('filename') || decodeURIComponent(parsed.pathname.split('/').pop() || 'file');
  } catch {
    return url.slice(0, 200) || 'file';
  }
}

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

export function createExtraRunners(deps: NodeDeps): Record<string, NodeRunner> {
  const code: NodeRunner = async ({ params, node }) => {
    const variables = dynamicParams(node, params);
    const source = String(params.code ?? '');
    if (!deps.sandboxUrl) {
      // As the reference: the error output only (a text), no run-detail entry.
      return { outputs: { error: 'Can not find SANDBOX_URL in env' } };
    }
    try {
      const response = await deps.httpCall({
        url: joinUrl(deps.sandboxUrl, '/sandbox/js'),
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ code: source, variables }),
        timeoutMs: 60_000,
      });
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

  const readFiles: NodeRunner = async ({ params, histories }) => {
    const fromInput = Array.isArray(params.fileUrlList) ? params.fileUrlList.filter((u): u is string => typeof u === 'string') : [];
    const fromHistory = histories.filter((item) => item.obj === 'Human').flatMap((item) => valuesFileUrls(item.value));
    const urls = [...new Set([...fromHistory, ...fromInput])].slice(-MAX_FILES);
    const read: { url: string; name: string }[] = [];
    const parts: string[] = [];
    for (const url of urls) {
      const name = fileNameOf(url);
      read.push({ url, name });
      try {
        const file = await deps.download(url);
        const { text } = await extractText({ buffer: file.buffer, filename: name, mimetype: file.contentType });
        parts.push(`File: ${name}\n<Content>\n${text}\n</Content>`);
      } catch (error) {
        parts.push(`File: ${name}\n<Content>\nThe file could not be read: ${(error as Error).message}\n</Content>`);
      }
    }
    const text = parts.join('\n******\n');
    return { outputs: { system_text: text }, responseData: { readFiles: read, readFilesResult: text.slice(0, 2000) }, toolResponses: text };
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
