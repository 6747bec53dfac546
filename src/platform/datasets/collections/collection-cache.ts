import { estimateBytes, MiB } from '../../../infra/byte-estimate.js';
import { createTeamDocCache } from '../../../infra/team-doc-cache.js';
import type { VersionStamps } from '../../../infra/version-stamps.js';
import type { CollectionRecord } from './collection.repo.js';

/** The version stamp of a team's collections: bumped by every write that changes or deletes one. */
export const collectionStampKey = (teamId: string) => `dataset-collections:${teamId}`;

/**
 * What the kept collections may weigh (estimated, infra/byte-estimate.ts): a collection carries its
 * user metadata, any JSON up to the 1 MB body limit, so counts alone (1,000 teams × 500) let a
 * member make every replica hold gigabytes, as the apps' caches did (docs/apps.md). A per-document
 * cap above what a request can write keeps every real collection cacheable.
 */
export const COLLECTION_CACHE_BYTES = { total: 32 * MiB, perTeam: 8 * MiB, perDoc: 4 * MiB } as const;

/**
 * Collections by id as authorisation reads them, kept per process and per team under the team's
 * leased stamp (infra/team-doc-cache.ts): every update or delete of a collection bumps it
 * (collection.repo.ts), and another team's collections, or unknown ids, are read each time.
 */
export function createCollectionCache(options: { stamps: VersionStamps; load: (id: string) => Promise<CollectionRecord | null> }) {
  const cache = createTeamDocCache<CollectionRecord>({
    stamps: options.stamps,
    stampKeys: (teamId) => [collectionStampKey(teamId)],
    load: (_teamId, id) => options.load(id),
    teamOf: (collection) => collection.teamId,
    bytes: { weigh: estimateBytes, ...COLLECTION_CACHE_BYTES },
  });
  return {
    /** The kept collections' estimated bytes, all teams (tests). */
    weight: cache.weight,
    /** The collection as the database has it now (for writes into it: see dataset-auth.ts). */
    fresh: (id: string): Promise<CollectionRecord | null> => options.load(id),
    /** The collection as `load` answers it; from memory when the caller's team has it kept. */
    find: (teamId: string, id: string): Promise<CollectionRecord | null> => cache.find(teamId, id),
  };
}

export type CollectionCache = ReturnType<typeof createCollectionCache>;
