/**
 * One non-streaming OpenAI-compatible chat completion (`POST …/chat/completions`) for the
 * dataset workers: QA training and searchTest's query extension. The body is llm-stream's
 * chatRequestBody, as the chat nodes send it; the transport is provider-http's, whose timeout
 * and ProviderError (the provider's own message, `isInvalidRequest`) the training queue and its
 * failed items' `errorMsg` rely on. The URL and key come from the model (requestUrl/requestAuth)
 * or the defaults (OPENAI_BASE_URL / CHAT_API_KEY). Token counts are the provider's usage
 * figures, estimated locally when it reports none.
 */
import { countTokens, reportedTokens } from '../domain/token-count.js';
import type { LLMModel } from '../domain/models.js';
import type { ProviderDefaults } from './embeddings.js';
import { chatRequestBody, estimatePromptTokens } from './llm-stream.js';
import { endpointUrl, ProviderError, postProviderJson } from './provider-http.js';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface ChatResult {
  content: string;
  inputTokens: number;
  outputTokens: number;
}

interface ChatResponse {
  choices?: { message?: { content?: unknown } }[];
  usage?: { prompt_tokens?: unknown; completion_tokens?: unknown };
}

export async function chatCompletion(
  model: LLMModel,
  messages: ChatMessage[],
  defaults: ProviderDefaults,
  options: { temperature?: number; maxTokens?: number; signal?: AbortSignal } = {},
): Promise<ChatResult> {
  const label = `language model ${model.model}`;
  const base = model.requestUrl ?? defaults.baseUrl;
  if (!base) throw new ProviderError(`The ${label} has no request URL (set its requestUrl or OPENAI_BASE_URL)`, 'not_configured');
  const body = await postProviderJson<ChatResponse>({
    url: endpointUrl(base, '/chat/completions'),
    apiKey: model.requestAuth ?? defaults.apiKey,
    timeoutMs: defaults.timeoutMs,
    label,
    signal: options.signal,
    body: { ...chatRequestBody(model, { messages, temperature: options.temperature, maxTokens: options.maxTokens }), stream: false },
  });
  const choice = Array.isArray(body.choices) ? body.choices[0] : undefined;
  if (!choice?.message) throw new ProviderError(`The ${label} answer has no choices`, 'invalid_response');
  const raw = choice.message.content;
  const content = typeof raw === 'string' ? raw : '';
  return {
    content,
    inputTokens: reportedTokens(body.usage?.prompt_tokens) ?? estimatePromptTokens(messages),
    outputTokens: reportedTokens(body.usage?.completion_tokens) ?? countTokens(content),
  };
}
