/**
 * Pure helpers over the text of a source (no I/O, few imports: the CSV and text worker threads
 * load them): NUL removal, the hash, split options and split of a text, and CSV rows as Q/A items.
 */
import { createHash } from 'node:crypto';
import { type SplitTextOptions, splitText } from '../../../domain/text-splitter.js';
import { parseCsv } from '../../../infra/csv.js';
import { Errors } from '../../../infra/errors.js';
import type { TrainingMode } from './collection.repo.js';

/** Text from outside (pages, files, file names) loses NUL characters before it is stored: PostgreSQL-backed stores refuse them. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: removing NUL is the point
export const withoutNul = (text: string): string => text.replace(/\u0000/g, '');

/** A stored file's text as imports and previews read it: NUL removed; 400 when no text is left. */
export function usableFileText(filename: string, text: string): string {
  const usable = withoutNul(text);
  if (!usable.trim()) throw Errors.missingParams(`File ${filename} contains no text`);
  return usable;
}

export const hashText = (text: string): string => createHash('sha256').update(text).digest('hex');

/** A split's settings: splitText's options but the text. */
export type SplitSettings = Omit<SplitTextOptions, 'text'>;

/** A text as an import records it: its chunks (numbered in order), the hash and length of the text. */
export interface SplitSource {
  items: { q: string; chunkIndex: number }[];
  hashRawText: string;
  rawTextLength: number;
}

/** Splits a text as an import does, in this thread or in the large-text worker (the same chunks either way). */
export function splitSource(text: string, split: SplitSettings): SplitSource {
  const items = splitText({ text, ...split }).chunks.map((q, chunkIndex) => ({ q, chunkIndex }));
  return { items, hashRawText: hashText(text), rawTextLength: text.length };
}

/** How an import splits its source: overlap 0.2 in chunk mode and none for Q&A extraction, unless given. */
export function splitOptionsOf(settings: { chunkSize: number; chunkSplitter?: string; trainingType: TrainingMode }, overlapRatio?: number): SplitSettings {
  return {
    chunkLen: settings.chunkSize,
    overlapRatio: overlapRatio ?? (settings.trainingType === 'chunk' ? 0.2 : 0),
    customReg: settings.chunkSplitter ? [settings.chunkSplitter] : [],
  };
}

/**
 * CSV rows → Q/A items: column 1 is q, column 2 is a, later columns are ignored, empty rows
 * dropped. The header row is imported as data, as the reference does (its template's
 * `index,content` header becomes an item) — unless it is exactly that template header.
 */
export function csvToQa(text: string): { q: string; a: string }[] {
  return qaFromRows(parseCsv(text.replace(/^\uFEFF/, '')));
}

/** csvToQa on rows already parsed. */
export function qaFromRows(rows: string[][]): { q: string; a: string }[] {
  if (rows.length === 0) throw Errors.missingParams('The CSV file has no rows');
  if (!rows.some((row) => row.length >= 2)) throw Errors.missingParams('The CSV file needs two columns: q (column 1) and a (column 2)');
  return qaItemsOf(rows);
}

/** Rows as Q/A items, without the file-wide checks of qaFromRows (rows of a file's beginning). */
export function qaItemsOf(rows: string[][]): { q: string; a: string }[] {
  const [first] = rows;
  const start = first && first[0]?.trim() === 'index' && first[1]?.trim() === 'content' ? 1 : 0;
  return rows
    .slice(start)
    .map((row) => ({ q: (row[0] ?? '').trim(), a: (row[1] ?? '').trim() }))
    .filter((row) => row.q || row.a);
}
