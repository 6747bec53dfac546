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

/** FNV-1a over UTF-16 units, then a murmur3 finaliser to spread the bits. */
export function hashFeature(feature: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < feature.length; i++) {
    hash ^= feature.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return hash >>> 0;
}

function addFeature(vector: Float64Array, feature: string, weight: number): void {
  const hash = hashFeature(feature);
  const slot = hash % vector.length;
  // The sign comes from bits the slot index does not use, so collisions cancel on average.
  vector[slot]! += (hash & 0x80000000) === 0 ? weight : -weight;
}

function addWordFeatures(vector: Float64Array, words: string[]): void {
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    addFeature(vector, `w:${word}`, STOP_WORDS.has(word) ? WEIGHTS.stopWord : WEIGHTS.word);
    const next = words[i + 1];
    if (next !== undefined) addFeature(vector, `p:${word} ${next}`, WEIGHTS.wordPair);
    if (STOP_WORDS.has(word)) continue;
    const padded = `^${word}$`;
    for (let j = 0; j + 3 <= padded.length; j++) addFeature(vector, `t:${padded.slice(j, j + 3)}`, WEIGHTS.trigram);
  }
}

function addCjkFeatures(vector: Float64Array, run: string): void {
  const chars = Array.from(run);
  for (let i = 0; i < chars.length; i++) {
    addFeature(vector, `c:${chars[i]}`, WEIGHTS.cjkChar);
    if (i + 1 < chars.length) addFeature(vector, `cc:${chars[i]}${chars[i + 1]}`, WEIGHTS.cjkPair);
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
  if (!normalizeVector(vector)) return Array.from(vector, () => 0);
  return Array.from(vector);
}

/** Dot product; equals cosine similarity for L2-normalised vectors. */
export function dotProduct(a: ArrayLike<number>, b: ArrayLike<number>): number {
  const length = Math.min(a.length, b.length);
  let sum = 0;
  for (let i = 0; i < length; i++) sum += a[i]! * b[i]!;
  return sum;
}
