import { describe, expect, it } from 'vitest';
import { shortenEmbedding } from '../../src/domain/embedding-shortening.js';

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
