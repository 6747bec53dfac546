import { type Caller, type PermissionResource, type RequiredPermission, resolvePermission } from '../../../domain/permission.js';
import { escapeRegex } from '../../../infra/mongo.js';
import type { VersionStamps } from '../../../infra/version-stamps.js';
import type { ListedDataset } from './dataset.repo.js';

/** The version stamp of a team's dataset lists: bumped by every write that changes what they show. */
export const datasetListStampKey = (teamId: string) => `datasets:${teamId}`;

/** One dataset of the team with what every request needs computed once per load. */
export interface ListedEntry {
  doc: ListedDataset;
  resource: PermissionResource;
}

/** A team's datasets as loaded: what the list routes filter and judge per request. */
export interface TeamDatasets {
  /** In the list's order: newest `updateTime` first, then newest `_id`. */
  entries: ListedEntry[];
  byId: Map<string, ListedEntry>;
  /** The member's own permission rows on the team's datasets (resource → value), loaded once per member. */
  rowsOf(tmbId: string): Promise<Map<string, number>>;
}

export interface DatasetListQuery {
  /** null: the root; else that folder's children (ignored with a search key). */
  parentId: string | null;
  types?: readonly string[];
  /** A case-insensitive substring of the name or the intro, over the whole team. */
  searchKey?: string;
}

export interface DatasetListReadModelDeps {
  stamps: VersionStamps;
  loadDatasets(teamId: string): Promise<ListedDataset[]>;
  loadRows(teamId: string, tmbId: string): Promise<Map<string, number>>;
  toResource(doc: ListedDataset): PermissionResource;
  /** Teams kept, least recently used dropped first. */
  maxTeams?: number;
  /** A safety net: a list older than this is loaded again even if its stamp did not move (a bump lost to a failure). */
  maxAgeMs?: number;
  now?: () => number;
}

interface Cached {
  stamp: string;
  loadedAt: number;
  seq: number;
  team: TeamDatasets;
}

const descending = <T>(a: T, b: T) => (a < b ? 1 : a > b ? -1 : 0);
/** MongoDB's descending order: a missing `updateTime` sorts last. */
const updatedAt = (doc: ListedDataset) => (doc.updateTime instanceof Date ? doc.updateTime.getTime() : Number.NEGATIVE_INFINITY);
const byListOrder = (a: ListedEntry, b: ListedEntry) => descending(updatedAt(a.doc), updatedAt(b.doc)) || descending(a.doc._id, b.doc._id);

/**
 * The datasets of a team as a per-process read model, kept while the team's version stamp is
 * unchanged (one `_id` read per request), keyed by team so no request ever sees another
 * team's datasets. The stamp is read before anything is loaded, so what is kept under a stamp
 * is at least as new as it; writers bump the stamp after writing (dataset repo, permission
 * service), so the next request on any process loads again.
 */
export function createDatasetListReadModel(deps: DatasetListReadModelDeps) {
  const maxTeams = deps.maxTeams ?? 1000;
  const maxAgeMs = deps.maxAgeMs ?? 5 * 60_000;
  const now = deps.now ?? (() => Date.now());
  const cache = new Map<string, Cached>();
  const loading = new Map<string, { stamp: string; team: Promise<TeamDatasets> }>();
  let loads = 0;

  function memberRows(teamId: string): (tmbId: string) => Promise<Map<string, number>> {
    const rows = new Map<string, Promise<Map<string, number>>>();
    return (tmbId) => {
      let found = rows.get(tmbId);
      if (!found) {
        found = deps.loadRows(teamId, tmbId);
        rows.set(tmbId, found);
        // A failed read is not kept: the next request tries again.
        const loaded = found;
        loaded.catch(() => {
          if (rows.get(tmbId) === loaded) rows.delete(tmbId);
        });
      }
      return found;
    };
  }

  async function build(teamId: string, stamp: string): Promise<TeamDatasets> {
    const seq = ++loads;
    const loadedAt = now();
    const docs = await deps.loadDatasets(teamId);
    const entries = docs.map((doc) => ({ doc, resource: deps.toResource(doc) }));
    entries.sort(byListOrder);
    const team: TeamDatasets = { entries, byId: new Map(entries.map((entry) => [entry.doc._id, entry])), rowsOf: memberRows(teamId) };
    // A slower load of an older stamp never replaces a newer one.
    const current = cache.get(teamId);
    if (!current || current.seq < seq) {
      cache.delete(teamId);
      cache.set(teamId, { stamp, loadedAt, seq, team });
      if (cache.size > maxTeams) cache.delete(cache.keys().next().value as string);
    }
    return team;
  }

  return {
    /** The team's datasets as of now. */
    async team(teamId: string): Promise<TeamDatasets> {
      const stamp = await deps.stamps.read(datasetListStampKey(teamId));
      const hit = cache.get(teamId);
      if (hit && hit.stamp === stamp && now() - hit.loadedAt < maxAgeMs) {
        cache.delete(teamId);
        cache.set(teamId, hit);
        return hit.team;
      }
      // Concurrent misses on one stamp share one load.
      const pending = loading.get(teamId);
      if (pending && pending.stamp === stamp) return pending.team;
      const team = build(teamId, stamp).finally(() => {
        if (loading.get(teamId)?.team === team) loading.delete(teamId);
      });
      loading.set(teamId, { stamp, team });
      return team;
    },

    /** Called after every write that changes the team's lists; resolves once every process will see it. */
    changed: (teamId: string): Promise<void> => deps.stamps.bump(datasetListStampKey(teamId)),

    /** How many teams are kept (tests). */
    size: () => cache.size,
  };
}

export type DatasetListReadModel = ReturnType<typeof createDatasetListReadModel>;

/**
 * The datasets a list query selects, in list order, before permissions: the semantics of the
 * former MongoDB query (`parentId: null` matches a missing parent too; with a search key the
 * whole team, name or intro matching the escaped key case-insensitively, as `$regex` with `i`;
 * an empty type list filters nothing).
 */
export function selectDatasets(team: TeamDatasets, query: DatasetListQuery): ListedEntry[] {
  if (query.searchKey) {
    const pattern = new RegExp(escapeRegex(query.searchKey), 'i');
    const matches = (text: unknown) => typeof text === 'string' && pattern.test(text);
    return team.entries.filter((entry) => matches(entry.doc.name) || matches(entry.doc.intro));
  }
  const types = query.types?.length ? new Set<string>(query.types) : undefined;
  return team.entries.filter((entry) => (entry.doc.parentId ?? null) === query.parentId && (!types || types.has(entry.doc.type)));
}

/**
 * The caller's permission on a listed dataset, judged in memory by the rules `resolveMany` and
 * `authorize` apply (an inheriting dataset follows its folder, found in the same team).
 */
export function permissionIn(team: TeamDatasets, rows: Map<string, number>, caller: Caller, entry: ListedEntry, required?: RequiredPermission) {
  const parentId = entry.resource.parentId;
  const parent = parentId ? (team.byId.get(parentId)?.resource ?? null) : null;
  return resolvePermission(entry.resource, parent, caller, (id) => rows.get(id), required);
}
