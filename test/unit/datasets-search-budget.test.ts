import { describe, expect, it } from 'vitest';
import { countTokens } from '../../src/domain/token-count.js';
import { csvToQa } from '../../src/platform/datasets/collections/collection-sources.js';
import { withinBudget } from '../../src/platform/datasets/search/search.service.js';

const item = (words: number) => ({ data: { q: Array.from({ length: words }, (_, i) => `word${i}`).join(' '), a: '' } });

describe('withinBudget (search limit as a token budget)', () => {
  const small = item(10);
  const tokens = countTokens(small.data.q);

  it.each([
    { name: 'stops after the item that reaches the limit', items: [small, small, small], limit: tokens * 2, expected: 2 },
    { name: 'keeps everything under the limit', items: [small, small], limit: tokens * 10, expected: 2 },
    { name: 'never returns nothing when there are results', items: [item(2000)], limit: 10, expected: 1 },
    { name: 'skips an item that would overshoot limit + 500', items: [small, item(3000), small], limit: tokens + 10, expected: 1 },
    { name: 'empty in, empty out', items: [], limit: 100, expected: 0 },
  ])('$name', ({ items, limit, expected }) => {
    expect(withinBudget(items, limit)).toHaveLength(expected);
  });
});

describe('csvToQa', () => {
  it.each([
    { name: 'column 1 = q, column 2 = a, extra columns ignored', csv: 'q1,a1,x\nq2,a2,y', expected: [{ q: 'q1', a: 'a1' }, { q: 'q2', a: 'a2' }] },
    { name: 'the template header index,content is skipped', csv: '\uFEFFindex,content\nq,a', expected: [{ q: 'q', a: 'a' }] },
    { name: 'another header row is data (as the reference)', csv: 'question,answer\nq,a', expected: [{ q: 'question', a: 'answer' }, { q: 'q', a: 'a' }] },
    { name: 'quoted cells with commas and newlines', csv: '"a, b","line1\nline2"', expected: [{ q: 'a, b', a: 'line1\nline2' }] },
    { name: 'empty rows dropped', csv: 'q,a\n,\n\nq2,', expected: [{ q: 'q', a: 'a' }, { q: 'q2', a: '' }] },
  ])('$name', ({ csv, expected }) => {
    expect(csvToQa(csv)).toEqual(expected);
  });

  it.each(['only\none\ncolumn', ''])('refuses %j', (csv) => {
    expect(() => csvToQa(csv)).toThrow(/column|no rows/);
  });
});
