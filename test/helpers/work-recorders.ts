/**
 * Module mocks that record the work this thread was given, for tests asserting what ran on the
 * event loop by the lengths handed over (never by time). Used from `vi.mock` factories:
 * `vi.mock('…/text-splitter.js', (importOriginal) => recordingSplitter(importOriginal, seen.split))`
 * with `seen` made by `vi.hoisted` (the factories are hoisted above the imports).
 */
import type * as CsvParse from 'csv-parse/sync';
import { expect } from 'vitest';
import type * as TextSplitter from '../../src/domain/text-splitter.js';

/** text-splitter.js whose splitText records the length of each text it splits. */
export async function recordingSplitter(importOriginal: () => Promise<unknown>, lengths: number[]) {
  const original = (await importOriginal()) as typeof TextSplitter;
  return {
    ...original,
    splitText: (options: Parameters<typeof original.splitText>[0]) => {
      lengths.push(options.text.length);
      return original.splitText(options);
    },
  };
}

/** csv-parse/sync whose parse records the length of each input it parses. */
export async function recordingCsvParse(importOriginal: () => Promise<unknown>, lengths: number[]) {
  const original = (await importOriginal()) as typeof CsvParse;
  return {
    ...original,
    parse: (input: string, options: Record<string, unknown>) => {
      lengths.push(input.length);
      return original.parse(input, options);
    },
  };
}

/**
 * The largest recorded length, once the recording holds `expected` entries (a count, or 'some':
 * at least one). A bound over an empty recording holds whatever ran (Math.max() is -Infinity),
 * so a check bounding recorded work first asserts that the work was recorded.
 */
export function largestRecorded(lengths: readonly number[], expected: number | 'some' = 'some', what = 'recorded work'): number {
  if (expected === 'some') expect(lengths.length, `${what}: nothing was recorded`).toBeGreaterThan(0);
  else expect(lengths.length, `${what}: entries recorded`).toBe(expected);
  return Math.max(...lengths);
}
