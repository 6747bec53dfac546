/**
 * The service's one token estimate, for whatever a provider does not count: item length limits,
 * search and quote budgets, prompt trimming, and the billing of calls whose answer carries no
 * usage. We ship no BPE vocabulary; the reference counts with tiktoken cl100k_base. Against
 * cl100k this is within about 10% on prose, markdown and CJK, about 1.2x on code and up to 2x
 * on compact JSON (each quote, colon and comma counts 1 where cl100k merges `":"`); it counts
 * low mostly on digit runs and base64 (0.3–0.7x). Counting high is the safe side for context
 * windows and limits.
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
