import { describe, expect, it } from 'vitest';
import { createCredentialCache } from '../../src/infra/credential-cache.js';

/** The cache as the cluster's bearer check uses it: a stamp per revocation, no age limit. */
function setup(maxEntries?: number) {
  const state = { stamp: 's1' };
  const cache = createCredentialCache<string | number>({
    epoch: { current: async () => state.stamp },
    now: () => 0,
    maxEntries,
    maxAgeMs: Number.POSITIVE_INFINITY,
  });
  /** The cached value, or undefined when `key` had to be resolved (nothing is stored then). */
  const cached = async (key: string) => (await cache.get(key, async () => null)) ?? undefined;
  const store = (key: string, value: string | number) => cache.get(key, async () => value);
  return { state, cached, store, cache };
}

describe('credential cache, as the cluster uses it', () => {
  it('serves an entry only under the stamp it was stored with', async () => {
    const { state, cached, store } = setup();
    await store('token-a', 'alice');
    expect(await cached('token-a')).toBe('alice');
    state.stamp = 's2';
    expect(await cached('token-a')).toBeUndefined();
    // Dropped once seen under another stamp, even if the old stamp comes back.
    state.stamp = 's1';
    expect(await cached('token-a')).toBeUndefined();
    expect(await cached('token-b')).toBeUndefined();
  });

  it('keeps at most its bound, dropping the least recently used entry first', async () => {
    const { cached, store } = setup(2);
    await store('a', 1);
    await store('b', 2);
    await store('c', 3);
    expect(await cached('a')).toBeUndefined();
    expect([await cached('b'), await cached('c')]).toEqual([2, 3]);
    // Using a key refreshes its place.
    await cached('b');
    await store('d', 4);
    expect([await cached('b'), await cached('c'), await cached('d')]).toEqual([2, undefined, 4]);
  });

  it('resolves a hit again when the caller finds it no longer usable (a token close to its expiry)', async () => {
    const { cache, store } = setup();
    await store('token', 'old check');
    expect(await cache.get('token', async () => 'fresh check', (value) => value !== 'old check')).toBe('fresh check');
    expect(await cache.get('token', async () => 'unused')).toBe('fresh check');
  });
});
