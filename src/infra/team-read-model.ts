import { LruMap } from './lru-map.js';
import type { VersionStamps } from './version-stamps.js';

export interface TeamReadModelOptions<T> {
  stamps: VersionStamps;
  /** The version stamp every write that changes the team's view bumps. */
  stampKey: (teamId: string) => string;
  load: (teamId: string) => Promise<T>;
  /** Teams kept, least recently used dropped first. */
  maxTeams?: number;
  /** A second bound on what is kept: the views' summed weight (see LruMap). */
  weight?: { weigh: (view: T) => number; max: number };
  /** A safety net: a view older than this is loaded again even if its stamp did not move (a bump lost to a failure). */
  maxAgeMs?: number;
  now?: () => number;
}

/**
 * A per-process view of each team's data (a list's read model), kept while the team's version
 * stamp is unchanged: one `_id` read per request, keyed by team so no request ever sees another
 * team's view. The stamp is read before loading, so a view kept under a stamp is at least as new
 * as it; writers call `changed` after writing, so the next request on any process loads again.
 */
export function createTeamReadModel<T>(options: TeamReadModelOptions<T>) {
  const maxTeams = options.maxTeams ?? 1000;
  const maxAgeMs = options.maxAgeMs ?? 5 * 60_000;
  const now = options.now ?? (() => Date.now());
  type Kept = { stamp: string; loadedAt: number; seq: number; view: T };
  const weight = options.weight;
  const cache = new LruMap<Kept>(maxTeams, weight && { weigh: (kept: Kept) => weight.weigh(kept.view), max: weight.max });
  const loading = new Map<string, { stamp: string; view: Promise<T> }>();
  let loads = 0;

  async function build(teamId: string, stamp: string): Promise<T> {
    const seq = ++loads;
    const loadedAt = now();
    const view = await options.load(teamId);
    // A slower load of an older stamp never replaces a newer one.
    const current = cache.get(teamId);
    if (!current || current.seq < seq) cache.set(teamId, { stamp, loadedAt, seq, view });
    return view;
  }

  return {
    /** The team's view as of now. */
    async team(teamId: string): Promise<T> {
      const stamp = await options.stamps.read(options.stampKey(teamId));
      const hit = cache.get(teamId);
      if (hit && hit.stamp === stamp && now() - hit.loadedAt < maxAgeMs) return hit.view;
      // Concurrent misses on one stamp share one load.
      const pending = loading.get(teamId);
      if (pending && pending.stamp === stamp) return pending.view;
      const view = build(teamId, stamp).finally(() => {
        if (loading.get(teamId)?.view === view) loading.delete(teamId);
      });
      loading.set(teamId, { stamp, view });
      return view;
    },

    /** Called after every write that changes the team's view; resolves once every process will see it. */
    changed: (teamId: string): Promise<void> => options.stamps.bump(options.stampKey(teamId)),

    /** How many teams are kept (tests). */
    size: () => cache.size,
  };
}

export type TeamReadModel<T> = ReturnType<typeof createTeamReadModel<T>>;
