import { describe, expect, it } from 'vitest';
import { ALPHANUMERIC, LOWERCASE, nanoid, randomBelow, randomString } from '../../src/infra/random-string.js';
import { shareIdToken } from '../../src/platform/chat/ids.js';
import { generateApiKey } from '../../src/platform/identity/api-keys.service.js';

describe('randomString', () => {
  it('draws only from the alphabet, at the asked length', () => {
    const text = randomString('xyz', 500);
    expect(text).toHaveLength(500);
    expect(text).toMatch(/^[xyz]+$/);
    expect(randomString(ALPHANUMERIC, 0)).toBe('');
  });

  it('is uniform over an alphabet that is not a power of two (no modulo bias)', () => {
    // 62 characters: masking to 63 and redrawing 62 and 63 keeps every character equally likely.
    const draws = 62 * 2000;
    const counts = new Map<string, number>();
    for (const char of randomString(ALPHANUMERIC, draws)) counts.set(char, (counts.get(char) ?? 0) + 1);
    expect(counts.size).toBe(62);
    // Chi-square with 61 degrees of freedom (mean 61): 130 is reached once in about a million runs; a modulo bias gives thousands.
    const expected = draws / 62;
    const chiSquare = [...counts.values()].reduce((sum, count) => sum + (count - expected) ** 2 / expected, 0);
    expect(chiSquare).toBeLessThan(130);
  });

  it('covers every value below the bound and none at or above it', () => {
    const seen = new Set<number>();
    for (let i = 0; i < 5000; i++) seen.add(randomBelow(14));
    expect([...seen].sort((a, b) => a - b)).toEqual([...Array(14).keys()]);
    expect(randomBelow(1)).toBe(0);
    expect(() => randomBelow(0)).toThrow(RangeError);
    expect(() => randomBelow(257)).toThrow(RangeError);
  });

  it('gives the shapes the reference uses', () => {
    expect(nanoid()).toMatch(/^[a-z][a-zA-Z0-9]{11}$/);
    expect(nanoid(24)).toMatch(/^[a-z][a-zA-Z0-9]{23}$/);
    expect(shareIdToken()).toMatch(/^[a-z0-9]{24}$/);
    const lengths = new Set(Array.from({ length: 400 }, () => generateApiKey().length));
    for (const key of Array.from({ length: 20 }, () => generateApiKey('fastgpt'))) expect(key).toMatch(/^fastgpt-[a-z][a-zA-Z0-9]{51,64}$/);
    // 'fastgpt-' + 1 + 51..64 characters.
    expect(Math.min(...lengths)).toBeGreaterThanOrEqual(8 + 1 + 51);
    expect(Math.max(...lengths)).toBeLessThanOrEqual(8 + 1 + 64);
    expect(LOWERCASE).toHaveLength(26);
  });
});
