import { describe, expect, it } from 'vitest';
import { groupBy } from '../../src/domain/group-by.js';

describe('groupBy', () => {
  it('keeps the items of each key in order, keys in order of first appearance', () => {
    const groups = groupBy(['b1', 'a1', 'b2', 'c1', 'a2'], (item) => item[0]);
    expect([...groups]).toEqual([
      ['b', ['b1', 'b2']],
      ['a', ['a1', 'a2']],
      ['c', ['c1']],
    ]);
  });

  it('groups by any key value (an id that may be a string or missing) and is empty for no items', () => {
    expect(groupBy([{ id: undefined }, { id: 'x' }, { id: undefined }], (item) => item.id).get(undefined)).toHaveLength(2);
    expect(groupBy([], () => 'k').size).toBe(0);
  });
});
