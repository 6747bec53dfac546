/**
 * An embedding shortened to its first `dimensions` components and scaled back to unit length,
 * as OpenAI's text-embedding-3 `dimensions` parameter does (those models put the most
 * information in the leading components). A prefix that is all zeros stays zeros: there is no
 * direction to keep, and dividing by a zero norm would answer NaN.
 */
export function shortenEmbedding(vector: readonly number[], dimensions: number): number[] {
  if (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > vector.length) {
    throw new RangeError(`dimensions must be an integer between 1 and ${vector.length}, got ${dimensions}`);
  }
  const prefix = vector.slice(0, dimensions);
  const norm = Math.hypot(...prefix);
  return norm === 0 ? prefix : prefix.map((value) => value / norm);
}

/**
 * A hashed-feature embedding (the built-in lexical model) brought to `dimensions` components by
 * adding each component into slot `index % dimensions` and scaling back to unit length: the
 * features hashed into fewer slots. Cutting a prefix instead would drop most features of such a
 * vector, whose information is spread evenly, and leave short texts with all zeros.
 */
export function foldEmbedding(vector: readonly number[], dimensions: number): number[] {
  if (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > vector.length) {
    throw new RangeError(`dimensions must be an integer between 1 and ${vector.length}, got ${dimensions}`);
  }
  const folded = new Array<number>(dimensions).fill(0);
  for (const [index, value] of vector.entries()) folded[index % dimensions]! += value;
  const norm = Math.hypot(...folded);
  return norm === 0 ? folded : folded.map((value) => value / norm);
}
