import { describe, expect, it } from 'vitest';
import { LruMap } from '../../src/infra/lru-map.js';

describe('LruMap', () => {
  it('drops the least recently used entry beyond max; a read or a rewrite makes an entry recent', () => {
    const map = new LruMap<number>(2);
    map.set('a', 1);
    map.set('b', 2);
    expect(map.get('a')).toBe(1);
    map.set('c', 3);
    expect(map.get('b')).toBeUndefined();
    map.set('a', 10);
    map.set('d', 4);
    expect(map.get('c')).toBeUndefined();
    expect([map.get('a'), map.get('d'), map.size]).toEqual([10, 4, 2]);
  });

  it('keeps the order right when the most recent entry is read again, deleted or overwritten', () => {
    const map = new LruMap<number>(2);
    map.set('a', 1);
    map.set('b', 2);
    map.get('b');
    map.get('a');
    map.get('a');
    map.set('c', 3);
    expect([map.get('a'), map.get('b'), map.get('c')]).toEqual([1, undefined, 3]);
    map.delete('c');
    map.set('b', 2);
    map.get('a');
    map.set('d', 4);
    expect([map.get('a'), map.get('b'), map.get('d')]).toEqual([1, undefined, 4]);
  });

  it('deletes one entry or all of them, and keeps nothing when max is 0', () => {
    const map = new LruMap<number>(3);
    map.set('a', 1);
    map.set('b', 2);
    map.delete('a');
    expect([map.get('a'), map.get('b'), map.size]).toEqual([undefined, 2, 1]);
    map.clear();
    expect(map.size).toBe(0);
    const none = new LruMap<number>(0);
    none.set('a', 1);
    expect([none.get('a'), none.size]).toEqual([undefined, 0]);
  });

  it('with a weight bound, drops the least recent entries until the sum fits, and keeps no entry heavier than the bound', () => {
    const map = new LruMap<string>(10, { weigh: (text) => text.length, max: 6 });
    map.set('a', 'xx');
    map.set('b', 'yy');
    map.set('c', 'zz');
    map.get('a');
    map.set('d', 'www');
    expect([map.get('a'), map.get('b'), map.get('c'), map.get('d')]).toEqual(['xx', undefined, undefined, 'www']);
    // A rewrite counts the new weight only.
    map.set('d', 'w');
    map.set('e', 'vvv');
    expect([map.get('a'), map.get('d'), map.get('e'), map.size]).toEqual(['xx', 'w', 'vvv', 3]);
    map.set('f', 'too heavy');
    expect([map.get('f'), map.get('a'), map.size]).toEqual([undefined, undefined, 0]);
    map.set('g', 'ok');
    map.delete('g');
    map.set('h', 'sixsix');
    expect([map.get('h'), map.size]).toEqual(['sixsix', 1]);
  });
});
