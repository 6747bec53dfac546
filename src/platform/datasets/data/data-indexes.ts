import { createHash } from 'node:crypto';
import { uniqueBy } from '../../../domain/unique-by.js';

/** Pure rules for data items: text normalisation and the index list (docs/datasets.md). */

/**
 * Custom indexes one data item may carry. The reference has no limit; 50 is far above what
 * clients send and keeps one item's embedding work bounded. An item over it is refused alone.
 */
export const MAX_CUSTOM_INDEXES = 50;
/** Stored indexes: the custom ones plus the default index and, for a Q/A pair, q alone. */
export const MAX_INDEXES = MAX_CUSTOM_INDEXES + 2;

/** The reference's simpleText: trim, LF line ends, at most one blank line, no control characters. */
export function simpleText(text = ''): string {
  return text
    .replace(/\r\n?/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    // biome-ignore lint/suspicious/noControlCharactersInRegex: removing control characters is the point
    .replace(/[\u0000-\u0008]/g, ' ')
    .trim();
}

export const defaultIndexText = (q: string, a: string): string => (a ? `${q}\n${a}`.trim() : q);

export interface IndexInput {
  text: string;
  defaultIndex?: boolean;
  dataId?: string;
}

/**
 * Indexes of a new item: the given texts (marked default when equal to q+a), the default index
 * first when none is, and q alone as an extra index for a Q/A pair. At most MAX_INDEXES.
 */
export function buildIndexes(q: string, a: string, custom: IndexInput[] = []): { text: string; defaultIndex: boolean }[] {
  const defaultText = defaultIndexText(q, a);
  const given = custom.map((index) => simpleText(index.text)).filter((text) => text.length > 0);
  const list = (given.length > 0 ? given : [defaultText]).map((text) => ({ text, defaultIndex: text === defaultText }));
  if (!list.some((index) => index.defaultIndex)) list.unshift({ text: defaultText, defaultIndex: true });
  else if (q && a && !list.some((index) => index.text === q)) list.push({ text: q, defaultIndex: false });
  return dedupe(list).slice(0, MAX_INDEXES);
}

function dedupe<T extends { text: string }>(list: T[]): T[] {
  return uniqueBy(list, (index) => index.text);
}

/**
 * The `_id` an index shows to clients (the reference's sub-document id): 24 hex characters
 * derived from the data item and the index's vector id, so it is stable across reads and
 * changes only when the index is re-embedded (new vector id). Nothing extra is stored.
 */
export const indexIdOf = (dataItemId: string, vectorId: string): string => createHash('sha256').update(`${dataItemId}:${vectorId}`).digest('hex').slice(0, 24);

export interface StoredIndex {
  dataId: string;
  text: string;
  defaultIndex: boolean;
}

export interface IndexPlan {
  /** Kept as they are. */
  keep: StoredIndex[];
  /** Texts to embed: updated (replacing `replaces`) or new. */
  embed: { text: string; defaultIndex: boolean; replaces?: string }[];
  /** Vector ids no longer used. */
  removeVectorIds: string[];
}

/**
 * Diff for data/update: submitted indexes carrying a stored dataId are kept or re-embedded when
 * their text changed, new ones are embedded, stored ones not submitted are removed. The default
 * index follows the new q/a.
 */
export function planIndexUpdate(stored: StoredIndex[], submitted: IndexInput[], q: string, a: string): IndexPlan {
  const defaultText = defaultIndexText(q, a);
  const storedById = new Map(stored.map((index) => [index.dataId, index]));
  const keep: StoredIndex[] = [];
  const embed: IndexPlan['embed'] = [];
  const used = new Set<string>();
  const storedDefault = stored.find((index) => index.defaultIndex);
  // The default index always exists and tracks q/a.
  if (storedDefault && storedDefault.text === defaultText) keep.push(storedDefault);
  else embed.push({ text: defaultText, defaultIndex: true, replaces: storedDefault?.dataId });
  if (storedDefault) used.add(storedDefault.dataId);
  for (const input of submitted) {
    const text = simpleText(input.text);
    if (!text || text === defaultText) continue;
    const previous = input.dataId ? storedById.get(input.dataId) : undefined;
    if (previous && !previous.defaultIndex && !used.has(previous.dataId)) {
      used.add(previous.dataId);
      if (previous.text === text) keep.push(previous);
      else embed.push({ text, defaultIndex: false, replaces: previous.dataId });
    } else if (!keep.some((index) => index.text === text) && !embed.some((index) => index.text === text)) {
      embed.push({ text, defaultIndex: false });
    }
  }
  const total = keep.length + embed.length;
  if (total > MAX_INDEXES) embed.splice(embed.length - (total - MAX_INDEXES));
  const survivors = new Set([...keep.map((index) => index.dataId)]);
  const removeVectorIds = stored.map((index) => index.dataId).filter((id) => !survivors.has(id));
  return { keep, embed, removeVectorIds };
}
