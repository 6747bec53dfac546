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

/** A cache whose epoch says what each move revoked: `moves` maps `from>to` to the subjects (absent: unknown). */
function scopedSetup() {
  const state = { epoch: 'e1', resolved: [] as string[], moves: new Map<string, string[]>(), asked: 0 };
  const cache = createCredentialCache<{ subjects: string[] }>({
    epoch: {
      current: async () => state.epoch,
      revokedBetween: async (from, to) => {
        state.asked++;
        const subjects = state.moves.get(`${from}>${to}`);
        return subjects ? new Set(subjects) : null;
      },
    },
    subjectsOf: (value) => value.subjects,
    now: () => 0,
  });
  const get = (key: string, subjects: string[]) =>
    cache.get(key, async () => {
      state.resolved.push(key);
      return { subjects };
    });
  return { state, cache, get };
}

describe('credential cache, revocations naming what they revoked', () => {
  it('a move revoking one subject drops only the entries holding it', async () => {
    const { state, get } = scopedSetup();
    await get('alice-session', ['user:alice', 'session:1']);
    await get('alice-key', ['user:alice', 'apikey:k']);
    await get('bob-session', ['user:bob', 'session:2']);
    state.moves.set('e1>e2', ['session:1']);
    state.epoch = 'e2';
    state.resolved = [];
    for (const [key, subjects] of [
      ['alice-session', ['user:alice', 'session:1']],
      ['alice-key', ['user:alice', 'apikey:k']],
      ['bob-session', ['user:bob', 'session:2']],
    ] as const) {
      await get(key, [...subjects]);
    }
    expect(state.resolved).toEqual(['alice-session']);
    // A user's revocation drops each of that user's entries, and nothing of another user.
    state.moves.set('e2>e3', ['user:alice']);
    state.epoch = 'e3';
    state.resolved = [];
    await get('alice-key', ['user:alice', 'apikey:k']);
    await get('bob-session', ['user:bob', 'session:2']);
    expect(state.resolved).toEqual(['alice-key']);
  });

  it('a move whose revocations are not known drops everything', async () => {
    const { state, get } = scopedSetup();
    await get('a', ['user:a']);
    await get('b', ['user:b']);
    state.epoch = 'e2';
    state.resolved = [];
    await get('a', ['user:a']);
    await get('b', ['user:b']);
    expect(state.resolved).toEqual(['a', 'b']);
  });

  it('an entry resolved under the old epoch while the cache moved on is not kept, even when its subject was not revoked', async () => {
    const { state, cache, get } = scopedSetup();
    await get('warm', ['user:x']);
    state.moves.set('e1>e2', ['user:other']);
    // The credential is resolved under e1; a revocation lands meanwhile and another request moves the cache to e2.
    await cache.get('late', async () => {
      state.epoch = 'e2';
      await get('warm', ['user:x']);
      return { subjects: ['user:late'] };
    });
    state.resolved = [];
    await get('late', ['user:late']);
    await get('warm', ['user:x']);
    expect(state.resolved).toEqual(['late']);
  });

  it('requests arriving together after a move ask what it revoked once', async () => {
    const { state, get } = scopedSetup();
    await get('a', ['user:a']);
    state.moves.set('e1>e2', ['user:b']);
    state.epoch = 'e2';
    await Promise.all([get('a', ['user:a']), get('a', ['user:a']), get('c', ['user:c'])]);
    expect(state.asked).toBe(1);
    expect(state.resolved.filter((key) => key === 'a')).toHaveLength(1);
  });
});
