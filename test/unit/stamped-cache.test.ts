import { describe, expect, it } from 'vitest';
import { createStampedCache } from '../../src/infra/stamped-read-model.js';

/** A cache over in-memory stamps and a loader that counts its loads and can be held. */
function setup(maxAgeMs = 1_000) {
  const stamps = new Map<string, string>([['a', 's1']]);
  let clock = 0;
  const loads: string[] = [];
  let hold: Promise<void> | undefined;
  const cache = createStampedCache<string, string>({
    cacheKey: (key) => key,
    stampOf: (key) => stamps.get(key) ?? '',
    load: async (key) => {
      const view = `${key}@${stamps.get(key)}#${loads.length + 1}`;
      loads.push(view);
      await hold;
      return view;
    },
    maxAgeMs,
    now: () => clock,
  });
  return {
    cache,
    stamps,
    loads,
    setClock: (at: number) => {
      clock = at;
    },
    /** Loads started from now on wait until the returned function is called. */
    holdLoads: () => {
      let release!: () => void;
      hold = new Promise<void>((resolve) => {
        release = resolve;
      });
      return release;
    },
    /** Loads started from now on do not wait (those already held still do). */
    letLoadsThrough: () => {
      hold = undefined;
    },
  };
}

describe('createStampedCache', () => {
  it('serves a view while its stamp is unchanged, and loads again when the stamp moves', async () => {
    const { cache, stamps, loads } = setup();
    expect(await cache.view('a')).toBe('a@s1#1');
    expect(await cache.view('a')).toBe('a@s1#1');
    stamps.set('a', 's2');
    expect(await cache.view('a')).toBe('a@s2#2');
    expect(loads).toHaveLength(2);
  });

  it('loads again at the same stamp once the view is older than maxAgeMs, or when the clock went back', async () => {
    const { cache, setClock, loads } = setup(1_000);
    setClock(10_000);
    await cache.view('a');
    setClock(10_999);
    await cache.view('a');
    expect(loads).toHaveLength(1);
    setClock(11_000);
    expect(await cache.view('a')).toBe('a@s1#2');
    setClock(5_000);
    expect(await cache.view('a')).toBe('a@s1#3');
  });

  it('shares one load among concurrent misses, but not a load started longer than maxAgeMs ago', async () => {
    const { cache, setClock, loads, holdLoads } = setup(1_000);
    const release = holdLoads();
    const first = cache.view('a');
    const second = cache.view('a');
    await Promise.resolve();
    expect(loads).toHaveLength(1);
    // A load that hangs is not waited for by requests arriving after maxAgeMs.
    setClock(2_000);
    const later = cache.view('a');
    await Promise.resolve();
    expect(loads).toHaveLength(2);
    release();
    expect(await first).toBe('a@s1#1');
    expect(await second).toBe('a@s1#1');
    expect(await later).toBe('a@s1#2');
  });

  it('never lets a slower load of an older stamp replace a newer view', async () => {
    const { cache, stamps, holdLoads, letLoadsThrough } = setup();
    const release = holdLoads();
    const old = cache.view('a');
    await Promise.resolve();
    letLoadsThrough();
    stamps.set('a', 's2');
    const current = await cache.view('a');
    release();
    expect(await old).toBe('a@s1#1');
    expect(current).toBe('a@s2#2');
    expect(await cache.view('a')).toBe('a@s2#2');
  });

  it('with a weight bound, loads a view over maxEntry each time and weighs a kept view again when it grows', async () => {
    const sizes = new Map<string, number>([
      ['small', 3],
      ['other', 3],
      ['huge', 50],
    ]);
    const grown = new Map<string, number>();
    const loads: string[] = [];
    const cache = createStampedCache<string, { key: string }>({
      cacheKey: (key) => key,
      stampOf: () => 's',
      load: async (key) => {
        loads.push(key);
        return { key };
      },
      weight: { weigh: (view) => (sizes.get(view.key) ?? 0) + (grown.get(view.key) ?? 0), max: 10, maxEntry: 8 },
    });
    const small = await cache.view('small');
    await cache.view('huge');
    await cache.view('huge');
    await cache.view('other');
    expect([loads, cache.size(), cache.weight()]).toEqual([['small', 'huge', 'huge', 'other'], 2, 6]);
    // A kept view that grew in place is weighed again: past the total the least recent goes.
    grown.set('other', 5);
    cache.reweigh('other', await cache.view('other'));
    expect([cache.size(), cache.weight()]).toEqual([1, 8]);
    // A view no longer kept is not weighed (its growth is not the cache's).
    grown.set('small', 1);
    cache.reweigh('small', small);
    expect([cache.size(), cache.weight()]).toEqual([1, 8]);
  });
});
