import { LruMap } from './lru-map.js';

export interface CredentialCacheOptions<T> {
  /**
   * The deployment-wide version every revoking write moves (leased). With `revokedBetween` (and
   * `subjectsOf`), a move drops only the entries of the subjects revoked; else every entry.
   */
  epoch: { current(): Promise<string>; revokedBetween?(from: string, to: string): Promise<ReadonlySet<string> | null> };
  /** The subjects an entry stands for (its session, user, member, team...), for targeted drops. */
  subjectsOf?: (value: T) => readonly string[];
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
  storedAt: number;
  value: T;
}

export const CREDENTIAL_CACHE_SIZE = 10_000;
export const CREDENTIAL_CACHE_MAX_AGE_MS = 60_000;

/**
 * Resolved credentials of this process (platform sessions, API keys and members; cluster bearer
 * tokens), trusted while the deployment's credential epoch is the one they were resolved under,
 * or one it moved to without revoking them. The epoch is read before resolving: a revoking write
 * moves it after writing, so a resolution that could have missed the write carries an older
 * epoch, and is not kept.
 */
export function createCredentialCache<T>(options: CredentialCacheOptions<T>) {
  const maxEntries = options.maxEntries ?? CREDENTIAL_CACHE_SIZE;
  const maxAgeMs = options.maxAgeMs ?? CREDENTIAL_CACHE_MAX_AGE_MS;
  const entries = new LruMap<Entry<T>>(maxEntries);
  /** The epoch every entry held stands for; entries resolved under another are not kept. */
  let validated: string | undefined;
  /** Moves to a new epoch, one after the other. */
  let moving: Promise<void> = Promise.resolve();

  /** Drops what the epoch's move revoked (everything when that is not known); the rest stands for `epoch`. */
  async function moveTo(epoch: string): Promise<void> {
    if (validated === epoch) return;
    const from = validated;
    const { revokedBetween } = options.epoch;
    const subjectsOf = options.subjectsOf;
    const revoked = from !== undefined && revokedBetween && subjectsOf ? await revokedBetween.call(options.epoch, from, epoch).catch(() => null) : null;
    if (revoked === null || !subjectsOf) entries.clear();
    else if (revoked.size > 0) {
      for (const key of [...entries.keys()]) {
        const entry = entries.peek(key);
        if (entry && subjectsOf(entry.value).some((subject) => revoked.has(subject))) entries.delete(key);
      }
    }
    validated = epoch;
  }

  return {
    /**
     * The value cached under `key` for the current epoch, else what `resolve` answers (cached
     * unless null). A refusal thrown by `resolve` is never cached. A hit that `usable` refuses
     * (say, a token close to its expiry) is resolved again.
     */
    async get<R extends T | null>(key: string, resolve: () => Promise<R>, usable?: (value: T) => boolean): Promise<T | R> {
      const epoch = await options.epoch.current();
      if (epoch !== validated) {
        const move = moving.then(() => moveTo(epoch));
        moving = move.catch(() => undefined);
        await move;
      }
      const hit = validated === epoch ? entries.get(key) : undefined;
      if (hit) {
        const age = options.now() - hit.storedAt;
        if (age >= 0 && age < maxAgeMs && (usable?.(hit.value) ?? true)) return hit.value;
        entries.delete(key);
      }
      const value = await resolve();
      // Resolved under an epoch the cache has since moved past: it may hold what was revoked.
      if (value !== null && validated === epoch) entries.set(key, { storedAt: options.now(), value: value as T });
      return value;
    },

    get size(): number {
      return entries.size;
    },
  };
}
