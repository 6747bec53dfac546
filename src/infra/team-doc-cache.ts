import { deepFreeze } from './deep-freeze.js';
import { LruMap } from './lru-map.js';
import type { VersionStamps } from './version-stamps.js';

export interface TeamDocCacheOptions<T> {
  stamps: VersionStamps;
  /** The stamps of a team that every write of a kept document bumps (read before the document). */
  stampKeys: (teamId: string) => string[];
  /** The document by id as the database has it; one of another team is answered but never kept. */
  load: (teamId: string, id: string) => Promise<T | null>;
  teamOf: (doc: T) => string;
  /** Teams kept, least recently used dropped first. */
  maxTeams?: number;
  /** Documents kept per team, least recently used dropped first. */
  maxPerTeam?: number;
  /** A safety net: a team's documents kept longer than this are read again (a bump lost to a crash). */
  maxAgeMs?: number;
  now?: () => number;
}

/**
 * Documents by id, kept per process and per team under the team's leased stamps: a warm read
 * costs no database command. Exact because the stamps are read before the document (what is kept
 * under them is at least as new), every write of a kept document bumps one of them and waits the
 * lease out (so the next read on any process sees it), only documents found are kept (an insert
 * needs no bump), and a document is kept and served only under its own team. Kept documents are
 * shared between requests, hence frozen.
 */
export function createTeamDocCache<T extends object>(options: TeamDocCacheOptions<T>) {
  const maxPerTeam = options.maxPerTeam ?? 500;
  const maxAgeMs = options.maxAgeMs ?? 5 * 60_000;
  const now = options.now ?? (() => Date.now());
  const teams = new LruMap<{ version: string; since: number; docs: LruMap<T> }>(options.maxTeams ?? 1000);

  return {
    async find(teamId: string, id: string): Promise<T | null> {
      const version = (await Promise.all(options.stampKeys(teamId).map((key) => options.stamps.read(key)))).join('|');
      let team = teams.get(teamId);
      if (!team || team.version !== version || now() - team.since >= maxAgeMs) {
        team = { version, since: now(), docs: new LruMap(maxPerTeam) };
        teams.set(teamId, team);
      }
      const kept = team.docs.get(id);
      if (kept) return kept;
      const found = await options.load(teamId, id);
      if (!found || options.teamOf(found) !== teamId) return found;
      const frozen = deepFreeze(found);
      team.docs.set(id, frozen);
      return frozen;
    },
  };
}

export type TeamDocCache<T extends object> = ReturnType<typeof createTeamDocCache<T>>;
