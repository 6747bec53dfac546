import { LruMap } from './lru-map.js';

export interface CredentialCacheOptions {
  /** The deployment-wide version every revoking write bumps (a leased version stamp). */
  epoch: { current(): Promise<string> };
  now: () => number;
  /** Least recently used entries go first beyond this size. */
  maxEntries?: number;
  /**
   * Entries are resolved again after this long even with the epoch unchanged, so a write made
   * outside the service (a database shell) is honoured within that time.
   */
  maxAgeMs?: number;
}

interface Entry<T> {
  epoch: string;
  storedAt: number;
  value: T;
}

export const CREDENTIAL_CACHE_SIZE = 10_000;
export const CREDENTIAL_CACHE_MAX_AGE_MS = 60_000;

/**
 * Resolved credentials of this process (platform sessions, API keys and members; cluster bearer
 * tokens), trusted while the deployment's credential epoch is the one they were resolved under. The epoch is read before resolving: a revoking write bumps
 * it after writing, so a resolution that could have missed the write carries an older epoch.
 */
export function createCredentialCache<T>(options: CredentialCacheOptions) {
  const maxEntries = options.maxEntries ?? CREDENTIAL_CACHE_SIZE;
  const maxAgeMs = options.maxAgeMs ?? CREDENTIAL_CACHE_MAX_AGE_MS;
  const entries = new LruMap<Entry<T>>(maxEntries);
  let newestEpoch: string | undefined;

  function store(key: string, epoch: string, value: T): void {
    // Entries of an older epoch can never be served again: drop them all at once.
    if (epoch !== newestEpoch) {
      entries.clear();
      newestEpoch = epoch;
    }
    entries.set(key, { epoch, storedAt: options.now(), value });
  }

  return {
    /**
     * The value cached under `key` for the current epoch, else what `resolve` answers (cached
     * unless null). A refusal thrown by `resolve` is never cached. A hit that `usable` refuses
     * (say, a token close to its expiry) is resolved again.
     */
    async get<R extends T | null>(key: string, resolve: () => Promise<R>, usable?: (value: T) => boolean): Promise<T | R> {
      const epoch = await options.epoch.current();
      const hit = entries.get(key);
      if (hit) {
        const age = options.now() - hit.storedAt;
        if (hit.epoch === epoch && age >= 0 && age < maxAgeMs && (usable?.(hit.value) ?? true)) return hit.value;
        entries.delete(key);
      }
      const value = await resolve();
      if (value !== null) store(key, epoch, value as T);
      return value;
    },

    get size(): number {
      return entries.size;
    },
  };
}
