import { describe, expect, it } from 'vitest';
import { lexicalEmbed } from '../../src/domain/lexical-embedding.js';
import { VectorIndex } from '../../src/domain/vector-index.js';

const unit = (...values: number[]) => {
  const length = Math.hypot(...values);
  return values.map((v) => v / length);
};

describe('VectorIndex', () => {
  it('finds the nearest vectors by cosine, best first', () => {
    const index = new VectorIndex(3);
    index.upsert('x', [1, 0, 0]);
    index.upsert('y', [0, 1, 0]);
    index.upsert('xy', unit(1, 1, 0));
    index.upsert('z', [0, 0, 1]);
    const hits = index.search([1, 0.1, 0], 3);
    expect(hits.map((hit) => hit.id)).toEqual(['x', 'xy', 'y']);
    expect(hits[0]!.score).toBeCloseTo(1 / Math.hypot(1, 0.1), 5);
  });

  it('normalises vectors on the way in (scores are cosines)', () => {
    const index = new VectorIndex(2);
    index.upsert('long', [10, 0]);
    expect(index.search([3, 0], 1)[0]!.score).toBeCloseTo(1, 6);
  });

  it.each([
    ['k larger than size', 10, 3],
    ['k equal to size', 3, 3],
    ['k smaller', 2, 2],
    ['k zero', 0, 0],
  ])('%s returns min(k, size) hits', (_name, k, expected) => {
    const index = new VectorIndex(2);
    index.upsert('a', [1, 0]);
    index.upsert('b', [0, 1]);
    index.upsert('c', [1, 1]);
    expect(index.search([1, 0.5], k)).toHaveLength(expected);
  });

  it('upsert replaces, remove frees the slot for reuse, size and has follow', () => {
    const index = new VectorIndex(2);
    index.upsert('a', [1, 0]);
    index.upsert('b', [0, 1]);
    expect(index.size).toBe(2);
    index.upsert('a', [0, 1]);
    expect(index.size).toBe(2);
    expect(index.search([1, 0], 1)[0]!.score).toBeCloseTo(0, 6);
    index.remove('a');
    index.remove('missing');
    expect(index.has('a')).toBe(false);
    expect(index.size).toBe(1);
    index.upsert('c', [1, 0]);
    expect(index.search([1, 0], 2).map((hit) => hit.id)).toEqual(['c', 'b']);
  });

  it('applies the filter without losing the top k of the allowed ids', () => {
    const index = new VectorIndex(2);
    for (let i = 0; i < 50; i++) index.upsert(`id${i}`, [1, i / 50]);
    const hits = index.search([1, 0], 5, (id) => Number(id.slice(2)) % 2 === 1);
    expect(hits.map((hit) => hit.id)).toEqual(['id1', 'id3', 'id5', 'id7', 'id9']);
  });

  it('rejects vectors of the wrong length; a zero query finds nothing', () => {
    const index = new VectorIndex(4);
    expect(() => index.upsert('a', [1, 2])).toThrow(/dimensions/);
    index.upsert('a', [1, 0, 0, 0]);
    expect(() => index.search([1], 1)).toThrow(/dimensions/);
    expect(index.search([0, 0, 0, 0], 3)).toEqual([]);
    expect(() => new VectorIndex(0)).toThrow(RangeError);
  });

  it('grows past its initial capacity and agrees with a brute-force scan', () => {
    const index = new VectorIndex(256);
    const texts = Array.from({ length: 500 }, (_, i) => `document ${i} about topic ${i % 17} and subject ${i % 23}`);
    for (const [i, text] of texts.entries()) index.upsert(`d${i}`, lexicalEmbed(text));
    expect(index.size).toBe(500);
    const query = lexicalEmbed('topic 5 and subject 7');
    const brute = texts
      .map((text, i) => ({ id: `d${i}`, score: lexicalEmbed(text).reduce((sum, x, j) => sum + x * query[j]!, 0) }))
      .sort((a, b) => b.score - a.score)
      .slice(0, 10);
    const hits = index.search(query, 10);
    expect(hits.map((hit) => hit.id)).toEqual(brute.map((hit) => hit.id));
    for (const [i, hit] of hits.entries()) expect(hit.score).toBeCloseTo(brute[i]!.score, 4);
  });

  it.each([
    ['JavaScript scan (small index)', 300, 13],
    ['SIMD kernel (large index, odd dimensions)', 6000, 37],
  ])('%s: same top k as a brute-force scan, also after removals and replacements', (_name, count, dimensions) => {
    let seed = 11;
    const random = () => {
      seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
      return seed / 2 ** 32 - 0.5;
    };
    const vectors = new Map<string, number[]>();
    const index = new VectorIndex(dimensions);
    const ids = Array.from({ length: count }, (_, i) => `v${i}`);
    const rows = new Float32Array(count * dimensions).map(random);
    index.upsertRows(ids, rows);
    for (const [i, id] of ids.entries()) vectors.set(id, Array.from(rows.subarray(i * dimensions, (i + 1) * dimensions)));
    for (let i = 0; i < count; i += 7) {
      index.remove(`v${i}`);
      vectors.delete(`v${i}`);
    }
    for (let i = 1; i < count; i += 11) {
      const replaced = Array.from({ length: dimensions }, random);
      index.upsert(`v${i}`, replaced);
      vectors.set(`v${i}`, replaced);
    }
    expect(index.size).toBe(vectors.size);
    const query = Array.from({ length: dimensions }, random);
    const cosine = (v: number[]) => v.reduce((sum, x, j) => sum + x * query[j]!, 0) / Math.hypot(...v) / Math.hypot(...query);
    const brute = [...vectors].map(([id, v]) => ({ id, score: cosine(v) })).sort((a, b) => b.score - a.score);
    const hits = index.search(query, 20);
    expect(hits.map((hit) => hit.id)).toEqual(brute.slice(0, 20).map((hit) => hit.id));
    for (const [i, hit] of hits.entries()) expect(hit.score).toBeCloseTo(brute[i]!.score, 5);
    const odd = index.search(query, 5, (id) => Number(id.slice(1)) % 2 === 1);
    expect(odd.map((hit) => hit.id)).toEqual(brute.filter((hit) => Number(hit.id.slice(1)) % 2 === 1).slice(0, 5).map((hit) => hit.id));
    const exported = new Map([...index.entries()].map(([id, v]) => [id, Array.from(v)]));
    expect(exported.size).toBe(vectors.size);
    expect(cosine(exported.get('v1')!)).toBeCloseTo(cosine(vectors.get('v1')!), 5);
  });
});
