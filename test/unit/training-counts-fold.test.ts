import { describe, expect, it } from 'vitest';
import { type CountBase, type CountDelta, deltasOf, needsRecount, positiveSums, summarise, Tally } from '../../src/platform/datasets/training/training-counts-fold.js';

const owner = { teamId: 't1', datasetId: 'd1' };
const base = (over: Partial<CountBase> = {}): CountBase => ({
  kind: 'base',
  ...owner,
  counts: [{ c: 'c1', m: 'embed', n: 5 }],
  folded: [],
  changedAt: new Date(1000),
  checkedAt: new Date(1000),
  ...over,
});
const delta = (id: string, n: number, at: number): CountDelta => ({ kind: 'delta', id, ...owner, counts: [{ c: 'c1', m: 'embed', n }], at: new Date(at) });

describe('summarise', () => {
  it('adds the deltas the base does not hold to it; folded ones left behind are stale, not counted again', () => {
    const summary = summarise([delta('a', 2, 3000), base({ folded: ['b'] }), delta('b', 7, 2000)]);
    expect(summary.counts.entries()).toEqual([{ c: 'c1', m: 'embed', n: 7 }]);
    expect(summary.live.map((doc) => doc.id)).toEqual(['a']);
    expect(summary.stale.map((doc) => doc.id)).toEqual(['b']);
    expect(summary.changedAt).toEqual(new Date(3000));
  });

  it('without a base, counts the deltas alone', () => {
    const summary = summarise([delta('a', 2, 3000), delta('b', -2, 4000)]);
    expect(summary.base).toBeUndefined();
    expect(summary.counts.entries()).toEqual([]);
    expect(summary.changedAt).toEqual(new Date(4000));
  });
});

describe('deltasOf', () => {
  it('sums each dataset’s changes by collection and model, and leaves out those that cancel out', () => {
    const change = (datasetId: string, collectionId: string, delta: number) => ({ teamId: 't1', datasetId, collectionId, model: 'embed', delta });
    expect(deltasOf([change('d1', 'c1', 2), change('d2', 'c9', 1), change('d1', 'c1', 3), change('d2', 'c9', -1), change('d1', 'c2', -1)])).toEqual([
      {
        teamId: 't1',
        datasetId: 'd1',
        counts: [
          { c: 'c1', m: 'embed', n: 5 },
          { c: 'c2', m: 'embed', n: -1 },
        ],
      },
    ]);
  });
});

describe('needsRecount', () => {
  const minute = 60_000;
  it.each([
    ['changed since its check and quiet for a minute', base({ checkedAt: new Date(0) }), 1000 + minute + 1, true],
    ['changed since its check, not quiet yet', base({ checkedAt: new Date(0) }), 1000 + minute, false],
    ['checked after its last change, within the hour', base(), 1000 + 59 * minute, false],
    ['showing items and unchecked for over an hour', base(), 1000 + 60 * minute + 1, true],
    ['unchecked for over an hour, but empty', base({ counts: [] }), 1000 + 61 * minute, false],
  ])('%s: %s', (_case, counts, now, expected) => {
    expect(needsRecount(counts, counts.changedAt, new Tally().addAll(counts.counts), now)).toBe(expected);
  });
});

describe('positiveSums', () => {
  it('sums the positive entries by the key given', () => {
    const tally = new Tally().addAll([
      { c: 'c1', m: 'a', n: 2 },
      { c: 'c2', m: 'a', n: 3 },
      { c: 'c3', m: 'b', n: -4 },
    ]);
    expect(positiveSums(tally, (entry) => entry.m)).toEqual(new Map([['a', 5]]));
  });
});
