import { describe, expect, it } from 'vitest';
import { reciprocalRankFusion } from '../../src/domain/rank-fusion.js';

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
