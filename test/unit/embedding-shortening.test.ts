import { describe, expect, it } from 'vitest';
import { foldEmbedding, shortenEmbedding } from '../../src/domain/embedding-shortening.js';
import { lexicalEmbed } from '../../src/domain/lexical-embedding.js';

const norm = (vector: number[]) => Math.hypot(...vector);

describe('shortenEmbedding', () => {
  it.each([
    { name: 'a prefix renormalised to unit length', vector: [3, 4, 12], dimensions: 2, expected: [0.6, 0.8] },
    { name: 'one component keeps its sign', vector: [-0.2, 0.9, 0.1], dimensions: 1, expected: [-1] },
    { name: 'the full size is the vector made unit length', vector: [0, 3, 4], dimensions: 3, expected: [0, 0.6, 0.8] },
    { name: 'an all-zero prefix stays zeros (no NaN)', vector: [0, 0, 1], dimensions: 2, expected: [0, 0] },
  ])('$name', ({ vector, dimensions, expected }) => {
    const shortened = shortenEmbedding(vector, dimensions);
    expect(shortened).toHaveLength(expected.length);
    for (const [index, value] of expected.entries()) expect(shortened[index]).toBeCloseTo(value, 12);
  });

  it('answers a unit vector for a long vector cut short, and leaves its input alone', () => {
    const vector = Array.from({ length: 1536 }, (_, i) => Math.sin(i + 1));
    const copy = [...vector];
    const shortened = shortenEmbedding(vector, 256);
    expect(shortened).toHaveLength(256);
    expect(norm(shortened)).toBeCloseTo(1, 12);
    // Same direction as the prefix: every component scaled by one factor.
    const factor = shortened[0]! / vector[0]!;
    for (const [index, value] of shortened.entries()) expect(value).toBeCloseTo(vector[index]! * factor, 12);
    expect(vector).toEqual(copy);
  });

  it.each([0, -1, 4, 1.5, Number.NaN])('refuses dimensions %s for a 3-component vector', (dimensions) => {
    expect(() => shortenEmbedding([1, 2, 3], dimensions)).toThrow(RangeError);
  });
});

describe('foldEmbedding (hashed features into fewer slots)', () => {
  it('adds each component into slot index % dimensions, back to unit length', () => {
    const folded = foldEmbedding([1, 2, 3, 4, 0, 0], 2);
    // [1 + 3 + 0, 2 + 4 + 0] = [4, 6], scaled to unit length.
    expect(folded[0]).toBeCloseTo(4 / Math.hypot(4, 6), 12);
    expect(folded[1]).toBeCloseTo(6 / Math.hypot(4, 6), 12);
  });

  it('keeps every feature of a short text, where a prefix of its hashed vector is all zeros', () => {
    for (const text of ['hello', 'hi', 'x', '好']) {
      const vector = lexicalEmbed(text);
      expect(shortenEmbedding(vector, 8).every((value) => value === 0), text).toBe(true);
      expect(norm(foldEmbedding(vector, 8)), text).toBeCloseTo(1, 12);
    }
  });

  it('leaves a vector whose extra components are zeros (the padded lexical vector) as it is at its full size', () => {
    const vector = [...lexicalEmbed('refund policy'), ...new Array<number>(1280).fill(0)];
    expect(foldEmbedding(vector, 256)).toEqual(vector.slice(0, 256).map((value) => value / norm(vector.slice(0, 256))));
  });

  it.each([0, 7, 2.5])('refuses dimensions %s for a 6-component vector', (dimensions) => {
    expect(() => foldEmbedding([1, 2, 3, 4, 5, 6], dimensions)).toThrow(RangeError);
  });
});
