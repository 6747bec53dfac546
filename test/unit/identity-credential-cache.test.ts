import { describe, expect, it } from 'vitest';
import { createCredentialCache } from '../../src/infra/credential-cache.js';

/** A cache over a fake epoch and clock; `resolved` counts the resolutions it asked for. */
function setup(options: { maxEntries?: number; maxAgeMs?: number } = {}) {
  const state = { epoch: 'e1', now: 0, resolved: 0 };
  const cache = createCredentialCache<string>({ epoch: { current: async () => state.epoch }, now: () => state.now, ...options });
  const get = (key: string, value: string | null = `value of ${key}`) =>
    cache.get(key, async () => {
      state.resolved++;
      return value;
    });
  return { state, cache, get };
}

describe('credential cache', () => {
  it('serves a resolved credential while the epoch is unchanged, and resolves again once it moves', async () => {
    const { state, get } = setup();
    expect(await get('a')).toBe('value of a');
    expect(await get('a')).toBe('value of a');
    expect(state.resolved).toBe(1);
    state.epoch = 'e2';
    await get('a');
    expect(state.resolved).toBe(2);
  });

  it('tags an entry with the epoch read before resolving it', async () => {
    const { state, cache } = setup();
    // The epoch moves while the credential is being resolved: the entry belongs to the old one.
    await cache.get('a', async () => {
      state.epoch = 'e2';
      return 'stale';
    });
    expect(await cache.get('a', async () => 'fresh')).toBe('fresh');
  });

  it('caches neither null nor a refusal', async () => {
    const { state, cache, get } = setup();
    expect(await get('gone', null)).toBeNull();
    await expect(cache.get('bad', async () => Promise.reject(new Error('refused')))).rejects.toThrow('refused');
    expect(await get('gone')).toBe('value of gone');
    expect(state.resolved).toBe(2);
  });

  it.each([
    ['younger than the maximum age', 59_999, 1],
    ['at the maximum age', 60_000, 2],
    ['stored in the future (clock moved back)', -1, 2],
  ])('an entry %s (age %i ms) costs %i resolutions in all', async (_name, age, resolutions) => {
    const { state, get } = setup({ maxAgeMs: 60_000 });
    await get('a');
    state.now = age;
    await get('a');
    expect(state.resolved).toBe(resolutions);
  });

  it('keeps at most maxEntries, dropping the least recently used', async () => {
    const { state, cache, get } = setup({ maxEntries: 2 });
    await get('a');
    await get('b');
    await get('a');
    await get('c');
    expect(cache.size).toBe(2);
    state.resolved = 0;
    await get('a');
    await get('c');
    expect(state.resolved).toBe(0);
    await get('b');
    expect(state.resolved).toBe(1);
  });
});
