import { describe, expect, it } from 'vitest';
import { estimateBytes } from '../../src/infra/byte-estimate.js';

describe('estimateBytes', () => {
  it('weighs a string by its characters, two bytes each once one is past U+00FF', () => {
    const latin = estimateBytes('é'.repeat(10_000));
    const cjk = estimateBytes('汉'.repeat(10_000));
    expect(latin).toBeGreaterThanOrEqual(10_000);
    expect(latin).toBeLessThan(11_000);
    // V8 keeps CJK text in two-byte strings: counted by length it weighed half of what it holds.
    expect(cjk).toBeGreaterThanOrEqual(20_000);
    expect(cjk).toBeLessThan(21_000);
    // One wide character makes the whole string two-byte.
    expect(estimateBytes(`${'a'.repeat(10_000)}汉`)).toBeGreaterThanOrEqual(20_002);
  });

  it('counts keys, elements and nested values, and walks deep nesting without recursion', () => {
    const flat = estimateBytes({ a: 'x'.repeat(1000) });
    expect(estimateBytes({ 键: 'x'.repeat(1000) })).toBe(flat + 1);
    expect(estimateBytes([flat, flat])).toBeGreaterThan(estimateBytes([flat]));
    let deep: unknown = 'leaf';
    for (let i = 0; i < 200_000; i++) deep = [deep];
    expect(estimateBytes(deep)).toBeGreaterThan(200_000 * 32);
  });
});
