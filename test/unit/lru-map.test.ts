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
    // Too heavy alone: not kept, and the others stay.
    map.set('f', 'too heavy');
    expect([map.get('f'), map.get('a'), map.size]).toEqual([undefined, 'xx', 3]);
    map.set('g', 'ok');
    map.delete('g');
    map.set('h', 'sixsix');
    expect([map.get('h'), map.size]).toEqual(['sixsix', 1]);
  });

  it('keeps no entry over maxEntry, dropping nothing else but the older value of its key', () => {
    const map = new LruMap<string>(10, { weigh: (text) => text.length, max: 10, maxEntry: 4 });
    map.set('a', 'aaa');
    map.set('b', 'bbb');
    map.set('c', 'ccccc');
    expect([map.get('a'), map.get('b'), map.get('c'), map.weight]).toEqual(['aaa', 'bbb', undefined, 6]);
    // A value grown past the cap replaces nothing: the key's old value goes, its weight with it.
    map.set('a', 'aaaaaaa');
    expect([map.get('a'), map.get('b'), map.size, map.weight]).toEqual([undefined, 'bbb', 1, 3]);
  });

  it('evicts the least recently used first until the summed weight fits', () => {
    const map = new LruMap<string>(100, { weigh: (text) => text.length, max: 9 });
    for (const key of ['a', 'b', 'c']) map.set(key, key.repeat(3));
    map.get('a');
    map.set('d', 'ddd');
    expect([map.peek('a'), map.peek('b'), map.peek('c'), map.peek('d'), map.weight]).toEqual(['aaa', undefined, 'ccc', 'ddd', 9]);
    map.set('e', 'eeeeee');
    expect([map.peek('a'), map.peek('c'), map.peek('d'), map.peek('e'), map.weight]).toEqual([undefined, undefined, 'ddd', 'eeeeee', 9]);
  });

  it('keeps its total right through replace, delete, clear and reweigh, weighing each value once when stored', () => {
    const weighed: string[] = [];
    let changes = 0;
    const grown = new Map<string, number>();
    const map = new LruMap<string>(10, {
      weigh: (text) => {
        weighed.push(text);
        return text.length + (grown.get(text) ?? 0);
      },
      max: 20,
      maxEntry: 12,
      onChange: () => changes++,
    });
    map.set('a', 'aaaa');
    map.set('b', 'bb');
    map.set('a', 'a');
    expect([map.weight, changes]).toEqual([3, 3]);
    map.get('a');
    map.delete('b');
    map.delete('missing');
    expect([map.weight, changes, weighed]).toEqual([1, 4, ['aaaa', 'bb', 'a']]);
    // An entry grown in place is weighed again where it stands; past maxEntry it goes.
    map.set('c', 'cc');
    grown.set('a', 9);
    map.reweigh('a');
    expect([map.weight, map.peek('a')]).toEqual([12, 'a']);
    grown.set('a', 20);
    map.reweigh('a');
    expect([map.weight, map.peek('a'), map.peek('c')]).toEqual([2, undefined, 'cc']);
    map.clear();
    expect([map.weight, map.size, changes]).toEqual([0, 0, 8]);
    map.clear();
    expect(changes).toBe(8);
  });
});
