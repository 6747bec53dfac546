import type { VersionStamps } from '../../../infra/version-stamps.js';
import type { CollectionRepo } from '../collections/collection.repo.js';
import { collectionStampKey } from '../collections/collection-cache.js';
import type { CollectionInfo, DatasetEntry } from './dataset-entry.js';

/**
 * A kept list is compared with its team's collection stamp at most this often: a collection
 * write whose process died before logging its change (the log is what empties the list at once,
 * on every process) is seen within about this long, as the index's log catch-up (dataset-index.ts).
 */
export const COLLECTIONS_CHECK_MS = 60_000;
/**
 * A kept list is read again after this long whatever the stamp says: a write whose process died
 * before even its stamp bump (the collection cache of authorisation trusts as long).
 */
export const COLLECTIONS_MAX_AGE_MS = 5 * 60_000;

const sourceIdOf = (c: { fileId?: string; rawLink?: string; externalFileId?: string; externalFileUrl?: string }) => c.fileId ?? c.rawLink ?? c.externalFileId ?? c.externalFileUrl;

/**
 * The collections searches show and leave out, kept on each dataset's entry for the team that read
 * them. Three things make a kept list stale: a collection change in the index's log (rename, move,
 * forbid: `forgetCollections`, applied on every process within the search stamp's lease), a moved
 * team collection stamp (compared once a minute: the repository bumps it right after each
 * collection update or delete), and its age. A new collection is not in a kept list until a search
 * shows one of its items (`collectionInfo` reads the list again then); new collections are never
 * forbidden, so no search includes what it should leave out meanwhile.
 */
export function createCollectionLists(deps: { collections: Pick<CollectionRepo, 'byDatasets'>; stamps: Pick<VersionStamps, 'read'>; now: () => number }) {
  // The read in flight per entry, with the team and collections version it started at.
  const loads = new Map<DatasetEntry, { teamId: string; version: number; list: Promise<Map<string, CollectionInfo>> }>();

  /**
   * Reads the dataset's collections. The list is kept on the entry only when no collection change
   * was applied meanwhile (it may predate the change), but is returned either way: it is what the
   * caller's search sees. A read started before a change is not shared with a caller that came
   * after it, nor with another team's.
   */
  function load(teamId: string, entry: DatasetEntry): Promise<Map<string, CollectionInfo>> {
    const version = entry.collectionsVersion;
    const inFlight = loads.get(entry);
    if (inFlight?.version === version && inFlight.teamId === teamId) return inFlight.list;
    const startedAt = deps.now();
    const list = (async () => {
      // The stamp before the list: a list kept under a stamp is at least as new as it.
      const stamp = await deps.stamps.read(collectionStampKey(teamId));
      const rows = await deps.collections.byDatasets(teamId, [entry.datasetId]);
      const byId = new Map(rows.map((c) => [c._id, { _id: c._id, name: c.name, forbid: c.forbid, sourceId: sourceIdOf(c) }]));
      if (entry.collectionsVersion === version) entry.collections = { teamId, stamp, byId, loadedAt: startedAt, checkedAt: startedAt };
      return byId;
    })();
    const load = { teamId, version, list };
    loads.set(entry, load);
    const forget = () => {
      if (loads.get(entry) === load) loads.delete(entry);
    };
    list.then(forget, forget);
    return list;
  }

  /** The entry's collections for a search of `teamId`: the kept list while it is current, else read. */
  async function of(teamId: string, entry: DatasetEntry): Promise<ReadonlyMap<string, CollectionInfo>> {
    const kept = entry.collections;
    if (!kept || kept.teamId !== teamId) return load(teamId, entry);
    const at = deps.now();
    const checked = at - kept.checkedAt;
    if (checked >= 0 && checked < COLLECTIONS_CHECK_MS) return kept.byId;
    const age = at - kept.loadedAt;
    if (age >= 0 && age < COLLECTIONS_MAX_AGE_MS) {
      const stamp = await deps.stamps.read(collectionStampKey(teamId));
      // Still the kept list (no change applied while the stamp was read) and no collection written since.
      if (stamp === kept.stamp && entry.collections === kept) {
        kept.checkedAt = at;
        return kept.byId;
      }
    }
    if (entry.collections === kept) entry.forgetCollections();
    return load(teamId, entry);
  }

  return { of, load };
}

export type CollectionLists = ReturnType<typeof createCollectionLists>;
