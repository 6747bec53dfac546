import { describe, expect, it } from 'vitest';
import { mergeByRankFusion, reciprocalRankFusion } from '../../src/domain/rank-fusion.js';

const ids = (...values: string[]) => values.map((id) => ({ id }));

describe('reciprocalRankFusion', () => {
  it.each([
    ['no lists', [], []],
    ['one list keeps its order', [ids('a', 'b', 'c')], ['a', 'b', 'c']],
    ['agreement wins', [ids('a', 'b', 'c'), ids('b', 'a', 'd')], ['a', 'b', 'c', 'd']],
    ['item in both lists beats single-list leaders', [ids('x', 'shared'), ids('y', 'shared')], ['shared', 'x', 'y']],
    ['ties keep first-seen order', [ids('p'), ids('q')], ['p', 'q']],
  ])('%s', (_name, lists, expected) => {
    expect(reciprocalRankFusion(lists).map((item) => item.id)).toEqual(expected);
  });

  it('scores are sums of 1/(k + rank) with k = 60 by default', () => {
    const fused = reciprocalRankFusion([ids('a', 'b'), ids('b')]);
    expect(fused.find((item) => item.id === 'a')!.score).toBeCloseTo(1 / 61, 10);
    expect(fused.find((item) => item.id === 'b')!.score).toBeCloseTo(1 / 62 + 1 / 61, 10);
  });

  it('honours k and counts a duplicate inside one list once', () => {
    const fused = reciprocalRankFusion([ids('a', 'a', 'b')], 58);
    expect(fused).toEqual([
      { id: 'a', score: 1 / 59 },
      { id: 'b', score: 1 / 61 },
    ]);
  });
});

describe('mergeByRankFusion', () => {
  const quote = (id: string, q = 'x'.repeat(10), extra: Record<string, unknown> = {}) => ({ id, q, a: '', ...extra });

  it('merges the lists in fused order, keeping each item as its first list gave it', () => {
    const merged = mergeByRankFusion([[quote('a', 'aaaa', { from: 1 }), quote('b')], [quote('b'), quote('a', 'aaaa', { from: 2 }), quote('c')]], 1000);
    expect(merged.map((item) => item.id)).toEqual(['a', 'b', 'c']);
    expect(merged[0]).toMatchObject({ from: 1 });
  });

  it('stops at the character budget, but keeps at least one item', () => {
    const lists = [[quote('a'), quote('b'), quote('c')]];
    expect(mergeByRankFusion(lists, 25).map((item) => item.id)).toEqual(['a', 'b']);
    expect(mergeByRankFusion(lists, 5).map((item) => item.id)).toEqual(['a']);
    expect(mergeByRankFusion([], 5)).toEqual([]);
  });
});

describe('reciprocalRankFusion with a k per list', () => {
  it("weighs each list with its own k (the reference's rerank list uses 58)", () => {
    const fused = reciprocalRankFusion([[{ id: 'a' }], [{ id: 'b' }]], [60, 58]);
    expect(fused.map((entry) => entry.id)).toEqual(['b', 'a']);
    expect(fused[0]!.score).toBeCloseTo(1 / 59, 12);
    expect(fused[1]!.score).toBeCloseTo(1 / 61, 12);
    // A missing k falls back to 60.
    expect(reciprocalRankFusion([[{ id: 'a' }], [{ id: 'b' }]], [58])[1]!.score).toBeCloseTo(1 / 61, 12);
  });
});
