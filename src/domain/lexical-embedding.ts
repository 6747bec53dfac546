/**
 * The built-in "local-lexical" vector model: signed feature hashing of word unigrams and
 * bigrams, character 3-grams of words, and CJK character unigrams/bigrams, L2-normalised.
 * It captures shared vocabulary and spelling, not meaning: "car" and "automobile" are
 * unrelated here. It needs no network and no model file, so a fresh install can train and
 * search; configure an OpenAI-compatible model for semantic search.
 */
export const DEFAULT_LEXICAL_DIMENSIONS = 256;

const CJK_CLASS = '\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}\\p{Script=Hangul}';
/** Group 1: a run of CJK characters; group 2: a run of other letters/digits. */
const RUNS = new RegExp(`([${CJK_CLASS}]+)|((?:(?![${CJK_CLASS}])[\\p{L}\\p{M}\\p{N}])+)`, 'gu');

// Very frequent English words weigh less so that content words dominate the vector.
const STOP_WORDS = new Set(
  'a an and are as at be by for from has have in is it its of on or that the this to was were will with'.split(' '),
);

const WEIGHTS = { word: 1, stopWord: 0.25, wordPair: 0.6, trigram: 0.35, cjkChar: 0.5, cjkPair: 1 } as const;

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** FNV-1a over `text[start, end)` (UTF-16 units), continuing from `hash`. */
function fnv(hash: number, text: string, start = 0, end = text.length): number {
  let h = hash;
  for (let i = start; i < end; i++) h = Math.imul(h ^ text.charCodeAt(i), FNV_PRIME);
  return h;
}

/** The murmur3 finaliser, to spread FNV's bits before taking slot and sign. */
function finish(hash: number): number {
  let h = hash;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** The hash of a feature string such as `w:word` (features are hashed without building strings). */
export function hashFeature(feature: string): number {
  return finish(fnv(FNV_OFFSET, feature));
}

// Hash states after each feature-kind prefix.
const WORD = fnv(FNV_OFFSET, 'w:');
const PAIR = fnv(FNV_OFFSET, 'p:');
const TRIGRAM = fnv(FNV_OFFSET, 't:');
const CJK_CHAR = fnv(FNV_OFFSET, 'c:');
const CJK_PAIR = fnv(FNV_OFFSET, 'cc:');
const WHOLE = fnv(FNV_OFFSET, 'r:');
const SPACE = 0x20;
const START = 0x5e; // '^'
const END = 0x24; // '$'

function addHashed(vector: Float64Array, hash: number, weight: number): void {
  const slot = hash % vector.length;
  // The sign comes from a bit the slot index does not use, so collisions cancel on average.
  vector[slot]! += (hash & 0x80000000) === 0 ? weight : -weight;
}

function addWordFeatures(vector: Float64Array, words: string[]): void {
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    const stop = STOP_WORDS.has(word);
    addHashed(vector, finish(fnv(WORD, word)), stop ? WEIGHTS.stopWord : WEIGHTS.word);
    const next = words[i + 1];
    if (next !== undefined) addHashed(vector, finish(fnv(Math.imul(fnv(PAIR, word) ^ SPACE, FNV_PRIME), next)), WEIGHTS.wordPair);
    if (stop) continue;
    // Trigrams of "^word$", i.e. with start and end markers.
    const length = word.length;
    for (let j = -1; j < length - 1; j++) {
      let h = TRIGRAM;
      for (let k = j; k < j + 3; k++) {
        const code = k < 0 ? START : k >= length ? END : word.charCodeAt(k);
        h = Math.imul(h ^ code, FNV_PRIME);
      }
      addHashed(vector, finish(h), WEIGHTS.trigram);
    }
  }
}

function addCjkFeatures(vector: Float64Array, run: string): void {
  const chars = Array.from(run);
  for (let i = 0; i < chars.length; i++) {
    const char = chars[i]!;
    addHashed(vector, finish(fnv(CJK_CHAR, char)), WEIGHTS.cjkChar);
    const next = chars[i + 1];
    if (next !== undefined) addHashed(vector, finish(fnv(fnv(CJK_PAIR, char), next)), WEIGHTS.cjkPair);
  }
}

/** L2-normalise in place; returns false for a zero vector. */
export function normalizeVector(vector: ArrayLike<number> & { [index: number]: number }): boolean {
  let sum = 0;
  for (let i = 0; i < vector.length; i++) sum += vector[i]! * vector[i]!;
  if (sum === 0 || !Number.isFinite(sum)) return false;
  const scale = 1 / Math.sqrt(sum);
  for (let i = 0; i < vector.length; i++) vector[i] = vector[i]! * scale;
  return true;
}

export function lexicalEmbed(text: string, dimensions: number = DEFAULT_LEXICAL_DIMENSIONS): number[] {
  if (!Number.isInteger(dimensions) || dimensions < 1) throw new RangeError(`dimensions must be a positive integer, got ${dimensions}`);
  const vector = new Float64Array(dimensions);
  const normalised = (text ?? '').normalize('NFKC').toLowerCase();
  let words: string[] = [];
  for (const match of normalised.matchAll(RUNS)) {
    if (match[1]) {
      // A CJK run ends the current word sequence (no word pair spans scripts).
      addWordFeatures(vector, words);
      words = [];
      addCjkFeatures(vector, match[1]);
    } else if (match[2]) {
      words.push(match[2]);
    }
  }
  addWordFeatures(vector, words);
  if (normalizeVector(vector)) return Array.from(vector);
  // No letter, digit or CJK character (punctuation, symbols, emoji): the whole text is the one
  // feature, so such a text still has a direction ("?" matches "?") and no caller gets a zero
  // vector, whose cosine with anything is NaN. Only blank text embeds as zeros.
  const whole = normalised.trim();
  if (whole === '') return Array.from(vector, () => 0);
  addHashed(vector, finish(fnv(WHOLE, whole)), WEIGHTS.word);
  normalizeVector(vector);
  return Array.from(vector);
}

/** Dot product; equals cosine similarity for L2-normalised vectors. */
export function dotProduct(a: ArrayLike<number>, b: ArrayLike<number>): number {
  const length = Math.min(a.length, b.length);
  let sum = 0;
  for (let i = 0; i < length; i++) sum += a[i]! * b[i]!;
  return sum;
}
