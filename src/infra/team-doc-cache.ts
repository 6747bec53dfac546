import { deepFreeze } from './deep-freeze.js';
import { LruMap } from './lru-map.js';
import type { VersionStamps } from './version-stamps.js';

/** What the kept documents may weigh (estimated bytes, e.g. infra/byte-estimate.ts), once each when kept. */
export interface TeamDocBytes<T> {
  weigh: (doc: T) => number;
  /** All teams together, least recently used team dropped first. */
  total: number;
  /** One team's documents, its least recently used document dropped first. */
  perTeam: number;
  /** A heavier document is not kept: it is read from the database each time. */
  perDoc: number;
}

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
  /** Bounds on the documents' weight, besides their count (none without it). */
  bytes?: TeamDocBytes<T>;
  /** A safety net: a team's documents kept longer than this are read again (a bump lost to a crash). */
  maxAgeMs?: number;
  now?: () => number;
}

interface TeamDocs<T> {
  version: string;
  since: number;
  docs: LruMap<T>;
}

/**
 * Documents by id, kept per process and per team under the team's leased stamps: a warm read
 * costs no database command. Exact because the stamps are read before the document (what is kept
 * under them is at least as new), every write of a kept document bumps one of them and waits the
 * lease out (so the next read on any process sees it), only documents found are kept (an insert
 * needs no bump), and a document is kept and served only under its own team. Kept documents are
 * shared between requests, hence frozen. With `bytes`, a team weighs what its documents weigh.
 */
export function createTeamDocCache<T extends object>(options: TeamDocCacheOptions<T>) {
  const maxPerTeam = options.maxPerTeam ?? 500;
  const maxAgeMs = options.maxAgeMs ?? 5 * 60_000;
  const now = options.now ?? (() => Date.now());
  const bytes = options.bytes;
  const teams = new LruMap<TeamDocs<T>>(options.maxTeams ?? 1000, bytes && { weigh: (team) => team.docs.weight, max: bytes.total, maxEntry: bytes.perTeam });
  const newTeam = (teamId: string, version: string): TeamDocs<T> => {
    const team: TeamDocs<T> = {
      version,
      since: now(),
      // A document kept or dropped changes what its team weighs among the teams (if still kept).
      docs: new LruMap(maxPerTeam, bytes && { weigh: bytes.weigh, max: bytes.perTeam, maxEntry: bytes.perDoc, onChange: () => teams.peek(teamId) === team && teams.reweigh(teamId) }),
    };
    return team;
  };

  return {
    async find(teamId: string, id: string): Promise<T | null> {
      const version = (await Promise.all(options.stampKeys(teamId).map((key) => options.stamps.read(key)))).join('|');
      let team = teams.get(teamId);
      if (!team || team.version !== version || now() - team.since >= maxAgeMs) {
        team = newTeam(teamId, version);
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

    /** The kept documents' summed weight, all teams (tests). */
    weight: () => teams.weight,
  };
}

export type TeamDocCache<T extends object> = ReturnType<typeof createTeamDocCache<T>>;
