/**
 * Full-text recall without a database text index (FerretDB has no `$text`): data items store
 * `tokenizeForSearch(text)`; a query's tokens select candidates with `$in`, and BM25 ranks them.
 *
 * Tokens: NFKC + lower-case; runs of letters/digits of non-CJK scripts are words; CJK runs
 * give every character and every overlapping pair of characters (so both "知识" and "识库"
 * match "知识库", and single-character queries still match). Repeats are kept for term
 * frequency.
 */
import { textHead } from './text-cut.js';

const CJK_CLASS = '\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}\\p{Script=Hangul}';
const RUNS = new RegExp(`([${CJK_CLASS}]+)|((?:(?![${CJK_CLASS}])[\\p{L}\\p{M}\\p{N}])+)`, 'gu');

/** Longest word kept as one token, in UTF-16 units (longer runs such as base64 are cut, not indexed whole, at a character boundary). */
const MAX_WORD_LENGTH = 40;

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

/**
 * Tokens for a query: like `tokenizeForSearch`, but a CJK run of two or more characters gives
 * only its pairs (documents hold both characters and pairs, so pairs still match and select far
 * fewer candidates than single characters); a lone CJK character stays. Distinct, first-seen order.
 */
export function queryTokensForSearch(text: string): string[] {
  const tokens: string[] = [];
  const normalised = (text ?? '').normalize('NFKC').toLowerCase();
  for (const match of normalised.matchAll(RUNS)) {
    if (match[1]) {
      const chars = Array.from(match[1]);
      if (chars.length === 1) tokens.push(chars[0]!);
      for (let i = 0; i + 1 < chars.length; i++) tokens.push(chars[i]! + chars[i + 1]!);
    } else if (match[2]) {
      tokens.push(textHead(match[2], MAX_WORD_LENGTH));
    }
  }
  return uniqueTokens(tokens);
}

/** Distinct tokens in first-seen order (for `$in` candidate queries and stored token sets). */
export function uniqueTokens(tokens: string[]): string[] {
  return [...new Set(tokens)];
}

export interface Bm25Corpus {
  totalDocs: number;
  avgDocLength: number;
  /** Number of documents containing the token. */
  docFrequency: (token: string) => number;
}

export interface Bm25Params {
  /** Term-frequency saturation (default 1.2). */
  k1?: number;
  /** Length normalisation (default 0.75). */
  b?: number;
}

/** Okapi BM25 with the non-negative IDF ln(1 + (N − df + 0.5) / (df + 0.5)); docs scoring 0 are left out. */
export function bm25Scores(
  queryTokens: string[],
  docs: { id: string; tokens: string[] }[],
  corpus: Bm25Corpus,
  params: Bm25Params = {},
): { id: string; score: number }[] {
  const k1 = params.k1 ?? 1.2;
  const b = params.b ?? 0.75;
  const terms = uniqueTokens(queryTokens);
  if (terms.length === 0 || docs.length === 0) return [];
  const totalDocs = Math.max(corpus.totalDocs, docs.length);
  const avgDocLength = corpus.avgDocLength > 0 ? corpus.avgDocLength : 1;
  const idf = new Map<string, number>();
  for (const term of terms) {
    const df = Math.min(Math.max(corpus.docFrequency(term), 0), totalDocs);
    idf.set(term, Math.log(1 + (totalDocs - df + 0.5) / (df + 0.5)));
  }

  const scored: { id: string; score: number; order: number }[] = [];
  docs.forEach((doc, order) => {
    const frequencies = new Map<string, number>();
    for (const token of doc.tokens) if (idf.has(token)) frequencies.set(token, (frequencies.get(token) ?? 0) + 1);
    if (frequencies.size === 0) return;
    const lengthFactor = 1 - b + (b * doc.tokens.length) / avgDocLength;
    let score = 0;
    for (const [term, tf] of frequencies) score += (idf.get(term)! * tf * (k1 + 1)) / (tf + k1 * lengthFactor);
    if (score > 0) scored.push({ id: doc.id, score, order });
  });
  scored.sort((x, y) => y.score - x.score || x.order - y.order);
  return scored.map(({ id, score }) => ({ id, score }));
}
