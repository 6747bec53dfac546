import { describe, expect, it } from 'vitest';
import { CredentialCache } from '../../src/cluster/auth/credential-cache.js';

describe('CredentialCache', () => {
  it('serves an entry only under the stamp it was stored with', () => {
    const cache = new CredentialCache<string>();
    cache.set('s1', 'token-a', 'alice');
    expect(cache.get('s1', 'token-a')).toBe('alice');
    expect(cache.get('s2', 'token-a')).toBeUndefined();
    // Dropped once seen under another stamp, even if the old stamp comes back.
    expect(cache.get('s1', 'token-a')).toBeUndefined();
    expect(cache.get('s1', 'token-b')).toBeUndefined();
  });

  it('keeps at most its bound, dropping the oldest entry first', () => {
    const cache = new CredentialCache<number>(2);
    cache.set('s', 'a', 1);
    cache.set('s', 'b', 2);
    cache.set('s', 'c', 3);
    expect([cache.get('s', 'a'), cache.get('s', 'b'), cache.get('s', 'c')]).toEqual([undefined, 2, 3]);
    // Storing a key again refreshes its place.
    cache.set('s', 'b', 20);
    cache.set('s', 'd', 4);
    expect([cache.get('s', 'b'), cache.get('s', 'c'), cache.get('s', 'd')]).toEqual([20, undefined, 4]);
  });
});
