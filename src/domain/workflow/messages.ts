/** OpenAI-style request messages ↔ chat items, and the completion answer shape. */
import { textHead } from '../text-cut.js';
import { valuesText } from './chat-values.js';
import type { ChatItem, ChatValue, WorkflowInteractive } from './types.js';

export interface RequestMessage {
  role: 'system' | 'user' | 'assistant' | 'tool' | 'function';
  content?: unknown;
  dataId?: string;
  interactive?: WorkflowInteractive;
  tool_calls?: { id: string; function?: { name?: string; arguments?: string } }[];
  tool_call_id?: string;
  function_call?: { name?: string; arguments?: string };
  name?: string;
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .filter((part): part is { type: 'text'; text: string } => typeof part === 'object' && part !== null && (part as { type?: string }).type === 'text')
      .map((part) => part.text)
      .join('\n');
  }
  return '';
}

/** A user message's values; an empty text is kept (a workflow may run on variables alone, as in the reference). */
function userValues(content: unknown): ChatValue[] {
  if (typeof content === 'string') return [{ type: 'text', text: { content } }];
  if (!Array.isArray(content)) return [];
  const values: ChatValue[] = [];
  for (const part of content as Record<string, unknown>[]) {
    if (part?.type === 'text' && typeof part.text === 'string') values.push({ type: 'text', text: { content: part.text } });
    else if (part?.type === 'image_url') {
      // The request schema refuses a URL that is not text; callers building messages themselves get it dropped.
      const url = (part.image_url as { url?: unknown } | undefined)?.url;
      if (typeof url === 'string' && url) values.push({ type: 'file', file: { type: 'image', name: '', url } });
    } else if (part?.type === 'file_url' && typeof part.url === 'string') {
      values.push({ type: 'file', file: { type: 'file', name: typeof part.name === 'string' ? part.name : '', url: part.url } });
    }
  }
  return values;
}

/**
 * Converts request messages into chat items: messages with nothing in them are dropped, and
 * consecutive ones of one role with the same dataId (or none) are merged, as the reference does
 * (two user messages in a row are one question).
 */
export function messagesToChatItems(messages: readonly RequestMessage[]): ChatItem[] {
  const items: ChatItem[] = [];
  // The first tool answer per call id and function answer per name, found once instead of a
  // search of the whole history per call (quadratic in long agent histories).
  const toolAnswers = new Map<string | undefined, RequestMessage>();
  const functionAnswers = new Map<string | undefined, RequestMessage>();
  for (const m of messages) {
    const answers = m.role === 'tool' ? toolAnswers : m.role === 'function' ? functionAnswers : undefined;
    const key = m.role === 'tool' ? m.tool_call_id : m.name;
    if (answers && !answers.has(key)) answers.set(key, m);
  }
  for (const message of messages) {
    let item: ChatItem | undefined;
    if (message.role === 'system') {
      const text = contentText(message.content);
      item = { obj: 'System', value: text ? [{ type: 'text', text: { content: text } }] : [] };
    } else if (message.role === 'user') item = { obj: 'Human', value: userValues(message.content) };
    else if (message.role === 'assistant') {
      const values: ChatValue[] = [];
      const text = contentText(message.content);
      if (text) values.push({ type: 'text', text: { content: text } });
      if (message.tool_calls?.length) {
        values.push({
          type: 'tool',
          tools: message.tool_calls.map((call) => {
            const answer = toolAnswers.get(call.id);
            return { id: call.id, toolName: call.function?.name ?? '', toolAvatar: '', functionName: call.function?.name ?? '', params: call.function?.arguments ?? '', response: contentText(answer?.content) };
          }),
        });
      }
      if (message.function_call) {
        const answer = functionAnswers.get(message.function_call.name);
        const name = message.function_call.name ?? '';
        values.push({ type: 'tool', tools: [{ id: name, toolName: name, toolAvatar: '', functionName: name, params: message.function_call.arguments ?? '', response: contentText(answer?.content) }] });
      }
      if (message.interactive) values.push({ type: 'interactive', interactive: message.interactive });
      item = { obj: 'AI', value: values };
    }
    if (!item || item.value.length === 0) continue;
    if (message.dataId) item.dataId = message.dataId;
    const last = items[items.length - 1];
    if (last && last.dataId === item.dataId && last.obj === item.obj) last.value.push(...item.value);
    else items.push(item);
  }
  return items;
}

/** The completion's `choices[0].message.content`. */
export function answerContent(values: readonly ChatValue[], detail: boolean): string | ChatValue[] {
  if (values.length === 0) return '';
  if (values.length === 1 && values[0]!.type === 'text') return values[0]!.text.content;
  if (!detail) return valuesText(values);
  return [...values];
}

/** The chat title: the first 20 characters of the question's text, else "new chat". */
export function chatTitle(question: readonly ChatValue[]): string {
  const first = question.find((value) => value.type === 'text');
  return first?.type === 'text' && first.text.content ? textHead(first.text.content, 20) : '新对话';
}

/** Stable sort putting System items first. */
export function systemFirst(items: ChatItem[]): ChatItem[] {
  return [...items.filter((i) => i.obj === 'System'), ...items.filter((i) => i.obj !== 'System')];
}

/**
 * The most rounds of history a turn loads. A node's `history`/`maxContext` is a number the caller
 * writes (chatTest sends its own graph): unbounded, one turn could read a chat's whole record.
 * The reference's editor offers at most 50 rounds and the simple-app form here takes up to 100.
 */
export const MAX_HISTORY_ROUNDS = 100;

/** N for the history load: max(10, the largest numeric `history` or `maxContext` node input), at most MAX_HISTORY_ROUNDS. */
export function historyLoadLimit(nodes: readonly { inputs: readonly { key: string; value?: unknown }[] }[]): number {
  let max = 10;
  for (const node of nodes) {
    for (const input of node.inputs) {
      if ((input.key === 'history' || input.key === 'maxContext') && typeof input.value === 'number' && input.value > max) max = input.value;
    }
  }
  return Math.min(max, MAX_HISTORY_ROUNDS);
}

const PUBLIC_TYPES = new Set(['pluginModule', 'datasetSearchNode', 'tools', 'pluginOutput']);
const PUBLIC_KEYS = ['quoteList', 'moduleType', 'pluginOutput'];

/** The "public" filter for share and team callers. */
export function filterPublicResponses(responses: readonly Record<string, unknown>[]): Record<string, unknown>[] {
  return responses
    .filter((item) => PUBLIC_TYPES.has(String(item.moduleType)))
    .map((item) => {
      const out: Record<string, unknown> = {};
      for (const key of PUBLIC_KEYS) if (item[key] !== undefined) out[key] = item[key];
      for (const key of ['toolDetail', 'pluginDetail']) {
        if (Array.isArray(item[key])) out[key] = filterPublicResponses(item[key] as Record<string, unknown>[]);
      }
      return out;
    });
}
