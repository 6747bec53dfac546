/** Helpers over chat values shared by the runtime and the chat service. */
import { historyItemsOf } from './input-shapes.js';
import type { ChatItem, ChatValue } from './types.js';

export function valuesText(values: readonly ChatValue[]): string {
  return values
    .filter((value) => value.type === 'text')
    .map((value) => value.text.content)
    .join('\n');
}

export function valuesFileUrls(values: readonly ChatValue[]): string[] {
  return values.flatMap((value) => (value.type === 'file' ? [value.file.url] : []));
}

/** The history an AI node sees: n rounds (2n items) plus every System item; an array is used as is (its readable items). */
export function selectHistories(history: unknown, histories: readonly ChatItem[]): ChatItem[] {
  if (Array.isArray(history)) return historyItemsOf(history) as unknown as ChatItem[];
  const rounds = Number(history);
  if (!rounds || rounds <= 0) return [];
  const system = histories.filter((item) => item.obj === 'System');
  const rest = histories.filter((item) => item.obj !== 'System');
  return [...system, ...rest.slice(-rounds * 2)];
}

/** Reads legacy records whose value was a plain string. */
export function normaliseValue(value: unknown): ChatValue[] {
  if (typeof value === 'string') return [{ type: 'text', text: { content: value } }];
  return Array.isArray(value) ? (value as ChatValue[]) : [];
}

/** The unanswered interactive value ending the last AI item, if any. */
export function pendingInteractive(histories: readonly ChatItem[]) {
  const lastAi = [...histories].reverse().find((item) => item.obj === 'AI');
  const last = lastAi?.value[lastAi.value.length - 1];
  if (last?.type !== 'interactive') return undefined;
  if (last.interactive.type === 'userSelect' && last.interactive.params.userSelectedVal !== undefined) return undefined;
  return last.interactive;
}
