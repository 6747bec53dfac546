/**
 * A deterministic approximation of an LLM tokenizer's count (close to cl100k on ordinary
 * prose), used for search token budgets and item length limits. We do not ship a real BPE
 * vocabulary; the reference counts with tiktoken cl100k_base, so budgets here are estimates.
 *
 * Rules: each CJK character (Han, kana, Hangul) counts 1; each run of other letters/digits
 * counts max(1, round(length / 5)) (common words are one token); each other non-space
 * symbol counts 1; whitespace is free.
 */
const CJK_CLASS = '\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}\\p{Script=Hangul}';
const PIECES = new RegExp(`([${CJK_CLASS}])|((?:(?![${CJK_CLASS}])[\\p{L}\\p{M}\\p{N}])+)|[^\\s\\p{L}\\p{M}\\p{N}]`, 'gu');

export function countTokens(text: string): number {
  if (!text) return 0;
  let tokens = 0;
  for (const match of text.matchAll(PIECES)) {
    const word = match[2];
    tokens += word ? Math.max(1, Math.round(word.length / 5)) : 1;
  }
  return tokens;
}

/**
 * A token count a provider reported in `usage`: a finite number of at least 0, else absent (the
 * caller estimates). A compatible proxy may send text ("12", which `+` would concatenate), null
 * or a negative number; none of them may reach a bill.
 */
export function reportedTokens(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}
