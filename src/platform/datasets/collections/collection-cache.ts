import { deepFreeze } from '../../../infra/deep-freeze.js';
import { LruMap } from '../../../infra/lru-map.js';
import type { VersionStamps } from '../../../infra/version-stamps.js';
import type { CollectionRecord } from './collection.repo.js';

/** The version stamp of a team's collections: bumped by every write that changes or deletes one. */
export const collectionStampKey = (teamId: string) => `dataset-collections:${teamId}`;

export interface CollectionCacheOptions {
  stamps: VersionStamps;
  /** The collection by id, whatever its team (the repository's `findForAuth`). */
  load: (id: string) => Promise<CollectionRecord | null>;
  maxTeams?: number;
  maxPerTeam?: number;
  /** A safety net: a team's collections kept longer than this are read again (a bump lost to a crash). */
  maxAgeMs?: number;
  now?: () => number;
}

/**
 * Collections by id as authorisation reads them, kept per process and per team under the team's
 * leased stamp: a warm read costs no database command. Exact because
 * - the stamp is read before the collection, so what is kept under it is at least as new;
 * - every update or delete of a collection bumps it and waits the lease out (collection.repo.ts),
 *   so the next request on any process sees the change; an insert needs no bump, since only
 *   collections that were found are kept;
 * - a collection is kept and served only under its own team, so no caller is ever answered with
 *   another team's collection from here (those, and unknown ids, go to the database each time).
 * Kept records are shared between requests, hence frozen.
 */
export function createCollectionCache(options: CollectionCacheOptions) {
  const maxPerTeam = options.maxPerTeam ?? 500;
  const maxAgeMs = options.maxAgeMs ?? 5 * 60_000;
  const now = options.now ?? (() => Date.now());
  const teams = new LruMap<{ stamp: string; since: number; collections: LruMap<CollectionRecord> }>(options.maxTeams ?? 1000);

  return {
    /** The collection as the database has it now (for writes into it: see dataset-auth.ts). */
    fresh: (id: string): Promise<CollectionRecord | null> => options.load(id),

    /** The collection as `load` answers it; from memory when the caller's team has it kept. */
    async find(teamId: string, id: string): Promise<CollectionRecord | null> {
      const stamp = await options.stamps.read(collectionStampKey(teamId));
      let team = teams.get(teamId);
      if (!team || team.stamp !== stamp || now() - team.since >= maxAgeMs) {
        team = { stamp, since: now(), collections: new LruMap(maxPerTeam) };
        teams.set(teamId, team);
      }
      const kept = team.collections.get(id);
      if (kept) return kept;
      const found = await options.load(id);
      if (found?.teamId !== teamId) return found;
      const frozen = deepFreeze(found);
      team.collections.set(id, frozen);
      return frozen;
    },
  };
}

export type CollectionCache = ReturnType<typeof createCollectionCache>;
