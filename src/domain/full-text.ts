/**
 * Tokens of the full-text search (FerretDB has no `$text`). A data item stores the distinct
 * tokens of its q and a (data-writer.ts `searchTokens`); each process builds an in-memory BM25
 * index from them (text-index.ts), and a query's distinct tokens are looked up in it
 * (search.service.ts). Every term frequency is therefore 1: the stored token lists are sets.
 *
 * Tokens: NFKC + lower-case; runs of letters/digits of non-CJK scripts are words; CJK runs
 * give every character and every overlapping pair of characters (so both "知识" and "识库"
 * match "知识库", and single-character queries still match).
 */
import { textHead } from './text-cut.js';

const CJK_CLASS = '\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}\\p{Script=Hangul}';
const RUNS = new RegExp(`([${CJK_CLASS}]+)|((?:(?![${CJK_CLASS}])[\\p{L}\\p{M}\\p{N}])+)`, 'gu');

/** Longest word kept as one token, in UTF-16 units (longer runs such as base64 are cut, not indexed whole, at a character boundary). */
const MAX_WORD_LENGTH = 40;

/** A text's tokens in order, repeats included (the callers keep the distinct ones). */
export function tokenizeForSearch(text: string): string[] {
  const tokens: string[] = [];
  const normalised = (text ?? '').normalize('NFKC').toLowerCase();
  for (const match of normalised.matchAll(RUNS)) {
    if (match[1]) {
      const chars = Array.from(match[1]);
      for (let i = 0; i < chars.length; i++) {
        tokens.push(chars[i]!);
        if (i + 1 < chars.length) tokens.push(chars[i]! + chars[i + 1]!);
      }
    } else if (match[2]) {
      tokens.push(textHead(match[2], MAX_WORD_LENGTH));
    }
  }
  return tokens;
}
