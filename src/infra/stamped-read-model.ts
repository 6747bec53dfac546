import { LruMap } from './lru-map.js';
import type { VersionStamps } from './version-stamps.js';

/** A cache of views keyed by `K`, each kept while the stamp it was loaded under is current. */
export interface StampedCacheOptions<K, T> {
  /** The key a view is kept under: a view is only ever served for the key it was loaded for. */
  cacheKey: (key: K) => string;
  /** The stamp the view of `key` is now at; every write that changes the view moves it. */
  stampOf: (key: K) => string | Promise<string>;
  load: (key: K) => Promise<T>;
  /**
   * Brings a view kept under an older stamp up to date (when it can say what changed), or null
   * for a full `load`. A refreshed view keeps its load's age: `maxAgeMs` still reloads it in full.
   */
  refresh?: (key: K, previous: T) => Promise<T | null>;
  /** Views kept, least recently used dropped first. */
  maxViews?: number;
  /** A second bound on what is kept: the views' summed weight, and the heaviest view kept (see LruMap). */
  weight?: { weigh: (view: T) => number; max: number; maxEntry?: number };
  /**
   * A safety net: a view older than this is loaded again even if its stamp did not move (a writer
   * stopped between its write and its bump), and a load started longer ago is not waited for.
   */
  maxAgeMs?: number;
  now?: () => number;
}

/**
 * Per-process views kept while their stamp is unchanged. The stamp is read before loading, so a
 * view kept under a stamp is at least as new as it; writers move the stamp after writing, so the
 * next request loads again. Concurrent misses on one stamp share one load, and a slower load of an
 * older stamp never replaces a newer view. Also reloaded: a view older than `maxAgeMs`, or one
 * whose load time lies in the future (the clock went back).
 */
export function createStampedCache<K, T>(options: StampedCacheOptions<K, T>) {
  const maxViews = options.maxViews ?? 1000;
  const maxAgeMs = options.maxAgeMs ?? 5 * 60_000;
  const now = options.now ?? (() => Date.now());
  type Kept = { stamp: string; loadedAt: number; seq: number; view: T };
  const weight = options.weight;
  const cache = new LruMap<Kept>(maxViews, weight && { weigh: (kept: Kept) => weight.weigh(kept.view), max: weight.max, maxEntry: weight.maxEntry });
  const loading = new Map<string, { stamp: string; startedAt: number; view: Promise<T> }>();
  let loads = 0;
  const isFresh = (since: number, at: number) => at - since >= 0 && at - since < maxAgeMs;

  async function build(key: K, cacheKey: string, stamp: string, startedAt: number, previous: Kept | undefined): Promise<T> {
    const seq = ++loads;
    let loadedAt = startedAt;
    let view = previous && options.refresh ? await options.refresh(key, previous.view) : null;
    if (view === null) view = await options.load(key);
    else loadedAt = (previous as Kept).loadedAt;
    const current = cache.get(cacheKey);
    if (!current || current.seq < seq) cache.set(cacheKey, { stamp, loadedAt, seq, view });
    return view;
  }

  return {
    /** The view of `key` as of now. */
    async view(key: K): Promise<T> {
      const cacheKey = options.cacheKey(key);
      const stamp = await options.stampOf(key);
      const at = now();
      const hit = cache.get(cacheKey);
      const fresh = hit !== undefined && isFresh(hit.loadedAt, at);
      if (fresh && hit.stamp === stamp) return hit.view;
      const pending = loading.get(cacheKey);
      if (pending && pending.stamp === stamp && isFresh(pending.startedAt, at)) return pending.view;
      const view = build(key, cacheKey, stamp, at, fresh ? hit : undefined).finally(() => {
        if (loading.get(cacheKey)?.view === view) loading.delete(cacheKey);
      });
      loading.set(cacheKey, { stamp, startedAt: at, view });
      return view;
    },

    /** Weighs the view of `key` again if it is still the one kept: it grew or shrank in place (an answer memoised in it). */
    reweigh(key: K, view: T): void {
      const cacheKey = options.cacheKey(key);
      if (cache.peek(cacheKey)?.view === view) cache.reweigh(cacheKey);
    },

    /** How many views are kept (tests). */
    size: () => cache.size,
    /** The kept views' summed weight (tests). */
    weight: () => cache.weight,
  };
}

/** A read model keyed by `K` (a team, a collection named with its team…) under version stamps. */
export interface StampedReadModelOptions<K, T> extends Omit<StampedCacheOptions<K, T>, 'stampOf'> {
  stamps: VersionStamps;
  /** The version stamp every write that changes the view bumps. */
  stampKey: (key: K) => string;
}

/**
 * A per-process view (a list's read model), kept while its version stamp is unchanged: one `_id`
 * read per request (see createStampedCache).
 */
export function createStampedReadModel<K, T>(options: StampedReadModelOptions<K, T>) {
  const { stamps, stampKey, ...rest } = options;
  const cache = createStampedCache<K, T>({ ...rest, stampOf: (key) => stamps.read(stampKey(key)) });
  return {
    /** The view of `key` as of now. */
    view: cache.view,
    /** Called after every write that changes the view; resolves once every process will see it. */
    changed: (key: K): Promise<void> => stamps.bump(stampKey(key)),
    reweigh: cache.reweigh,
    /** How many views are kept (tests). */
    size: cache.size,
    /** The kept views' summed weight (tests). */
    weight: cache.weight,
  };
}

export interface TeamReadModelOptions<T> extends Omit<StampedReadModelOptions<string, T>, 'cacheKey' | 'maxViews'> {
  /** Teams kept, least recently used dropped first. */
  maxTeams?: number;
}

/** A read model per team: keyed by team, so no request ever sees another team's view. */
export function createTeamReadModel<T>(options: TeamReadModelOptions<T>) {
  const { maxTeams, ...rest } = options;
  const model = createStampedReadModel<string, T>({ ...rest, maxViews: maxTeams, cacheKey: (teamId) => teamId });
  return {
    /** The team's view as of now. */
    team: model.view,
    /** Called after every write that changes the team's view; resolves once every process will see it. */
    changed: model.changed,
    /** Weighs the team's view again if it is still the one kept (it grew or shrank in place). */
    reweigh: model.reweigh,
    /** How many teams are kept (tests). */
    size: model.size,
    /** The kept views' summed weight (tests). */
    weight: model.weight,
  };
}

export type TeamReadModel<T> = ReturnType<typeof createTeamReadModel<T>>;
