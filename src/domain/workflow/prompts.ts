/** Prompt assembly for the LLM nodes (pure). */
import { countTokens } from '../token-count.js';
import { textHead } from '../text-cut.js';
import { valuesText } from './chat-values.js';
import { substitute } from './interpolate.js';
import type { ChatItem, ChatValue } from './types.js';


export interface PromptMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** A conversation as a node's response detail shows it (`historyPreview`): each text cut at 10,000 characters. */
export function historyPreview(messages: readonly PromptMessage[]): { obj: 'AI' | 'System' | 'Human'; value: string }[] {
  return messages.map((m) => ({ obj: m.role === 'assistant' ? 'AI' : m.role === 'system' ? 'System' : 'Human', value: textHead(m.content, 10000) }));
}

export function historyToMessages(histories: readonly ChatItem[]): PromptMessage[] {
  return histories
    .map((item): PromptMessage => ({ role: item.obj === 'System' ? 'system' : item.obj === 'AI' ? 'assistant' : 'user', content: valuesText(item.value) }))
    .filter((message) => message.content !== '');
}

/**
 * The messages an AI chat node sent, then its answer, as chat items: the node's `history` output,
 * as the reference gives it (system prompts and the quote-filled question included; `files` go
 * on the last user message, before its text).
 */
export function messagesToHistory(messages: readonly PromptMessage[], files: readonly ChatValue[] = []): ChatItem[] {
  const lastUser = messages.map((message) => message.role).lastIndexOf('user');
  return messages.map((message, index) => ({
    obj: message.role === 'system' ? 'System' : message.role === 'assistant' ? 'AI' : 'Human',
    value: [...(index === lastUser ? files : []), { type: 'text', text: { content: message.content } }],
  }));
}

export const DEFAULT_QUOTE_TEMPLATE = '{{q}}\n{{a}}';
export const DEFAULT_QUOTE_PROMPT =
  'Use the content inside <Quote></Quote> as your knowledge.\n<Quote>\n{{quote}}\n</Quote>\nAnswer in the language of the question. Question: """{{question}}"""';

export interface QuoteItem {
  q?: string;
  a?: string;
  sourceName?: string;
  sourceId?: string;
}

const TEMPLATE_PLACEHOLDER = /\{\{(\w+)\}\}/g;

/** A quote template filled in: what it adds is bounded as any substitution (a template naming a long quote thousands of times). */
function fill(template: string, values: Record<string, string>): string {
  return substitute(template, TEMPLATE_PLACEHOLDER, (match) => (Object.hasOwn(values, match[1]!) ? values[match[1]!] : undefined));
}

/** Renders quotes with the quote template, joined by the reference's separator, within a token budget. */
export function renderQuotes(quotes: readonly QuoteItem[], template: string, maxTokens: number): string {
  const parts: string[] = [];
  let used = 0;
  for (const [index, quote] of quotes.entries()) {
    const text = fill(template || DEFAULT_QUOTE_TEMPLATE, {
      q: quote.q ?? '',
      a: quote.a ?? '',
      source: quote.sourceName ?? '',
      sourceId: quote.sourceId ?? '',
      index: String(index + 1),
    }).trim();
    used += countTokens(text);
    if (used > maxTokens && parts.length > 0) break;
    parts.push(text);
  }
  return parts.join('\n------\n');
}

export function renderQuotePrompt(template: string, quote: string, question: string): string {
  return fill(template || DEFAULT_QUOTE_PROMPT, { quote, question });
}

/**
 * The `max_tokens` an AI chat node asks for, as the reference computes it: the node's value (4000
 * when it has none) within the model's maxResponse, lowered to what the context window leaves
 * after the prompt, and 200 when nothing is left.
 */
export function chatResponseTokens(requested: unknown, model: { maxResponse: number; maxContext: number }, promptTokens: number): number {
  const asked = requested === undefined || requested === null || requested === '' ? 4000 : Number(requested);
  let tokens = Math.min(Number.isFinite(asked) ? asked : 4000, model.maxResponse);
  if (promptTokens + tokens > model.maxContext) tokens = model.maxContext - promptTokens;
  // A whole number: providers refuse a fractional max_tokens as they refuse 0.
  const whole = Math.floor(tokens);
  return whole > 0 ? whole : 200;
}

/** What a model node asks for when neither it nor the model's maxResponse is a usable count. */
const DEFAULT_RESPONSE_TOKENS = 4000;

/** A whole number of at least 1 read from a node's value (a number or its text), else undefined. */
function positiveWhole(value: unknown): number | undefined {
  const number = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : Number.NaN;
  const whole = Math.floor(number);
  return Number.isFinite(whole) && whole >= 1 ? whole : undefined;
}

/**
 * The `max_tokens` a model node sends (tool calls, extraction, classification): the node's value
 * within the model's maxResponse, always a whole number of at least 1 (node inputs are not
 * validated, and a provider answers 400 to -5 or 2.5); maxResponse when the node has none.
 */
export function responseTokenLimit(requested: unknown, maxResponse: number): number {
  const cap = positiveWhole(maxResponse);
  const asked = positiveWhole(requested);
  if (cap === undefined) return asked ?? DEFAULT_RESPONSE_TOKENS;
  return Math.min(asked ?? cap, cap);
}

/** Keeps the system messages and the newest others within `maxTokens`. */
export function trimMessages<M extends { role: string; content: unknown }>(messages: M[], maxTokens: number): M[] {
  const size = (m: M) => countTokens(typeof m.content === 'string' ? m.content : JSON.stringify(m.content));
  const system = messages.filter((m) => m.role === 'system');
  const rest = messages.filter((m) => m.role !== 'system');
  let budget = maxTokens - system.reduce((sum, m) => sum + size(m), 0);
  const kept: M[] = [];
  for (let i = rest.length - 1; i >= 0; i -= 1) {
    const message = rest[i]!;
    budget -= size(message);
    if (budget < 0 && kept.length > 0) break;
    kept.unshift(message);
  }
  return [...system, ...kept];
}

/** What query extension asks the model (the cfr node, dataset search's extension, searchTest's). */
export function queryExtensionRequest(question: string, background: string): string {
  return `${background}\nWrite up to 3 search queries for: """${question}""". Reply as a JSON array of strings.`;
}

/**
 * The most queries one question is searched as. Each query is an embedding call, a rerank call
 * and a scan of the index, all at once: a question written as a JSON array of thousands of
 * strings must not fan out into thousands of them. A model's extension gives the question and
 * up to 3 rewrites.
 */
export const MAX_SEARCH_QUERIES = 8;

/**
 * A question written as a JSON array of strings is already a list of search queries: the
 * reference searches them as given, without asking a model. The list without repeats (texts
 * equal in their letters and digits count once), its first MAX_SEARCH_QUERIES, or undefined for
 * any other question.
 */
export function presetQueries(text: string): string[] | undefined {
  const trimmed = text.trim();
  if (!trimmed.startsWith('[')) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(trimmed);
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed)) return undefined;
  const seen = new Set<string>();
  const queries: string[] = [];
  for (const item of parsed) {
    if (typeof item !== 'string' || !item.trim()) continue;
    const key = item.replace(/[^\p{L}\p{N}]/gu, '');
    if (seen.has(key)) continue;
    seen.add(key);
    queries.push(item.trim());
    if (queries.length === MAX_SEARCH_QUERIES) break;
  }
  return queries.length > 0 ? queries : undefined;
}

/** The queries an extension reply gives: the question first, then its rewrites, without repeats (at most MAX_SEARCH_QUERIES). */
export function extendedQueries(question: string, reply: string): string[] {
  return [...new Set([question, ...parseQuestionList(reply)])].slice(0, MAX_SEARCH_QUERIES);
}

/** Parses the first `[` … last `]` of a model reply as a string array; [] when that fails. */
export function parseQuestionList(reply: string): string[] {
  const start = reply.indexOf('[');
  const end = reply.lastIndexOf(']');
  if (start < 0 || end <= start) return [];
  try {
    const parsed = JSON.parse(reply.slice(start, end + 1)) as unknown;
    return Array.isArray(parsed) ? parsed.filter((item): item is string => typeof item === 'string') : [];
  } catch {
    return [];
  }
}
