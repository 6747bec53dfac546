/**
 * A small OpenAI-compatible chat completions client with streaming (SSE) support, and the one
 * builder of a chat request's body (chatRequestBody). The client is the workflow's LLM nodes';
 * the dataset workers (llm-chat.ts) send the same body through provider-http. The base URL and
 * key come from the model's requestUrl/requestAuth or OPENAI_BASE_URL / CHAT_API_KEY.
 */
import { failureReason, providerErrorText, type ProviderResponse, providerRequest } from './provider-client.js';
import { joinUrl } from './join-url.js';
import type { LLMModel } from '../domain/models.js';
import { countTokens, reportedTokens } from '../domain/token-count.js';
import { responseTokenLimit } from '../domain/workflow/prompts.js';

export interface LlmToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface LlmMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | { type: string; [key: string]: unknown }[] | null;
  tool_calls?: LlmToolCall[];
  tool_call_id?: string;
}

export interface LlmEndpoint {
  baseUrl: string;
  apiKey?: string;
}

export interface LlmRequest {
  model: string;
  messages: LlmMessage[];
  temperature?: number;
  max_tokens?: number;
  [extra: string]: unknown;
}

/** The temperature ceiling of a model whose config names no `maxTemperature`. */
export const DEFAULT_MAX_TEMPERATURE = 1;

/** The highest temperature a model is sent: its `maxTemperature`, else DEFAULT_MAX_TEMPERATURE. */
export function maxTemperatureOf(model: Pick<LLMModel, 'maxTemperature'>): number {
  return model.maxTemperature ?? DEFAULT_MAX_TEMPERATURE;
}

export interface ChatRequestParts {
  messages: LlmMessage[];
  /** On the provider's scale; sent within [0, maxTemperatureOf(model)]. */
  temperature?: number;
  /** Sent as a whole number of at least 1 within the model's `maxResponse`. */
  maxTokens?: number;
  /** Fields of this call (tools, tool_choice): over the model's defaultConfig, under the ones above. */
  extra?: Record<string, unknown>;
}

/**
 * The body of every `/chat/completions` call (chat, extraction, classification, query extension
 * and tools nodes, QA training, searchTest's query extension). The model's `defaultConfig` comes
 * first, so what the call sets wins and the config fills the rest (top_p, a max_tokens the call
 * leaves out), as the reference builds it. Temperature and max_tokens are clamped here only.
 * `stream` is the transport's.
 */
export function chatRequestBody(model: LLMModel, parts: ChatRequestParts): LlmRequest {
  const { messages, temperature, maxTokens, extra } = parts;
  return {
    ...(model.defaultConfig ?? {}),
    ...extra,
    model: model.model,
    messages,
    ...(temperature === undefined || !Number.isFinite(temperature) ? {} : { temperature: Math.min(Math.max(temperature, 0), maxTemperatureOf(model)) }),
    ...(maxTokens === undefined ? {} : { max_tokens: responseTokenLimit(maxTokens, model.maxResponse) }),
  };
}

/**
 * The local estimate of a prompt's tokens, for a provider that reports no usage: the messages'
 * texts (a multi-part content as its JSON) and their tool calls' names and arguments, not the
 * JSON around them, so the same text counts the same from every node and worker.
 */
export function estimatePromptTokens(messages: readonly LlmMessage[]): number {
  let tokens = 0;
  for (const message of messages) {
    tokens += countTokens(typeof message.content === 'string' ? message.content : message.content ? JSON.stringify(message.content) : '');
    for (const call of message.tool_calls ?? []) tokens += countTokens(call.function.name) + countTokens(call.function.arguments);
  }
  return tokens;
}

export interface LlmResult {
  content: string;
  toolCalls?: LlmToolCall[];
  promptTokens?: number;
  completionTokens?: number;
  /**
   * The call was cut by the caller's own signal (the client hung up): `content` is what arrived
   * before, and the tokens are the provider's only when its usage came. Provider failures and
   * timeouts still throw.
   */
  cut?: boolean;
}

export class LlmError extends Error {
  override name = 'LlmError';

  constructor(
    message: string,
    /** The provider's answer, when it answered: its HTTP status and Retry-After. */
    readonly reply?: { status: number; retryAfter?: string },
  ) {
    super(message);
  }
}

function url(endpoint: LlmEndpoint, path: string): string {
  return joinUrl(endpoint.baseUrl, path);
}

function headers(endpoint: LlmEndpoint): Record<string, string> {
  return { 'content-type': 'application/json', ...(endpoint.apiKey ? { authorization: `Bearer ${endpoint.apiKey}` } : {}) };
}

async function post(endpoint: LlmEndpoint, body: object, signal: AbortSignal | undefined): Promise<ProviderResponse> {
  return providerRequest(url(endpoint, '/chat/completions'), { method: 'POST', headers: headers(endpoint), body: JSON.stringify(body), signal }).catch(
    (error: unknown) => {
      throw new LlmError(`The model provider is unreachable: ${failureReason(error)}`);
    },
  );
}

async function failure(endpoint: LlmEndpoint, response: ProviderResponse): Promise<LlmError> {
  const text = providerErrorText(await response.text().catch(() => ''), endpoint.apiKey, 300);
  const retryAfter = response.headers['retry-after'];
  return new LlmError(`The model provider answered HTTP ${response.status}${text ? `: ${text}` : ''}`, {
    status: response.status,
    retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined,
  });
}

/** A tool call a model wrote with a function name (anything else is not a call to run). */
function isToolCall(call: unknown): call is LlmToolCall {
  const fn = (call as { function?: { name?: unknown } } | null)?.function;
  return typeof fn?.name === 'string';
}

/**
 * Whether a failed call was cut by the caller's own signal (a turn whose client hung up), not
 * failed by the provider or a timeout (the provider client's timeout is its own timer, never
 * the signal). The caller then keeps what ran instead of failing, as the reference does.
 */
export function cutBy(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

/** One non-streaming completion. */
export async function completeChat(endpoint: LlmEndpoint, request: LlmRequest, signal?: AbortSignal): Promise<LlmResult> {
  const response = await post(endpoint, Object.assign({}, request, { stream: false }), signal);
  if (!response.ok) throw await failure(endpoint, response);
  // The provider's JSON as it is: any part may be missing, null or of another type.
  const body = await response.json<{
    choices?: { message?: { content?: unknown; tool_calls?: unknown } }[];
    usage?: { prompt_tokens?: number; completion_tokens?: number };
  } | null>();
  const message = body?.choices?.[0]?.message;
  const toolCalls = Array.isArray(message?.tool_calls) ? (message.tool_calls as unknown[]).filter(isToolCall) : [];
  return {
    content: typeof message?.content === 'string' ? message.content : '',
    ...(toolCalls.length ? { toolCalls } : {}),
    promptTokens: reportedTokens(body?.usage?.prompt_tokens),
    completionTokens: reportedTokens(body?.usage?.completion_tokens),
  };
}

/**
 * completeChat for a turn's node: cut by `signal` (the client hung up), an empty answer marked
 * `cut` instead of the abort's error; the prompt was sent, so the caller still bills it.
 */
export async function completeChatOrCut(endpoint: LlmEndpoint, request: LlmRequest, signal?: AbortSignal): Promise<LlmResult> {
  try {
    return await completeChat(endpoint, request, signal);
  } catch (error) {
    if (cutBy(signal)) return { content: '', cut: true };
    throw error;
  }
}

/** Reads `data:` payloads of an SSE body, one JSON value (or `[DONE]`) at a time. */
export async function* readSseData(body: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let boundary = buffer.indexOf('\n');
    while (boundary >= 0) {
      const line = buffer.slice(0, boundary).replace(/\r$/, '');
      buffer = buffer.slice(boundary + 1);
      if (line.startsWith('data:')) yield line.slice(5).trim();
      boundary = buffer.indexOf('\n');
    }
  }
  if (buffer.startsWith('data:')) yield buffer.slice(5).trim();
}

/** Starts a streamed completion (usage included at its end); an answer other than 2xx is an LlmError. */
export async function postStreamingChat(endpoint: LlmEndpoint, request: LlmRequest, signal?: AbortSignal): Promise<ProviderResponse> {
  const response = await post(endpoint, Object.assign({}, request, { stream: true, stream_options: { include_usage: true } }), signal);
  if (!response.ok) throw await failure(endpoint, response);
  return response;
}

/**
 * A streaming completion; `onDelta` receives each content fragment as it arrives. Cut by
 * `signal`, it answers the text streamed so far, marked `cut` (the reference's `res.closed` break).
 */
export async function streamChat(endpoint: LlmEndpoint, request: LlmRequest, onDelta: (text: string) => void, signal?: AbortSignal): Promise<LlmResult> {
  let content = '';
  let usage: { prompt_tokens?: number; completion_tokens?: number } | undefined;
  let cut = false;
  try {
    const response = await postStreamingChat(endpoint, request, signal);
    for await (const data of readSseData(response.chunks())) {
      if (data === '[DONE]') break;
      let parsed: { choices?: { delta?: { content?: string | null } }[]; usage?: typeof usage };
      try {
        parsed = JSON.parse(data);
      } catch {
        continue;
      }
      const delta = parsed?.choices?.[0]?.delta?.content;
      if (typeof delta === 'string' && delta) {
        content += delta;
        onDelta(delta);
      }
      if (parsed?.usage) usage = parsed.usage;
    }
  } catch (error) {
    if (!cutBy(signal)) throw error;
    cut = true;
  }
  return { content, promptTokens: reportedTokens(usage?.prompt_tokens), completionTokens: reportedTokens(usage?.completion_tokens), ...(cut ? { cut } : {}) };
}
