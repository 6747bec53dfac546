import type { PermissionResource } from '../../../domain/permission.js';
import { estimateBytes, MiB } from '../../../infra/byte-estimate.js';
import { deepFreeze } from '../../../infra/deep-freeze.js';
import { escapeRegex } from '../../../infra/mongo.js';
import { createTeamReadModel, type TeamReadModelOptions } from '../../../infra/stamped-read-model.js';
import type { DatasetRecord, ListedDataset } from './dataset.repo.js';

/** The version stamp of a team's dataset lists: bumped by every write that changes what they show. */
export const datasetListStampKey = (teamId: string) => `datasets:${teamId}`;

/** One dataset of the team with what every request needs computed once per load. */
export interface ListedEntry {
  /**
   * The whole document, as `findById` reads it: the lists show it and dataset authorisation
   * returns it. Shared by every request of the process until the team's stamp moves, so frozen.
   */
  doc: DatasetRecord;
  resource: PermissionResource;
}

/** A team's datasets as loaded: what the list routes filter and judge per request. */
export interface TeamDatasets {
  /** In the list's order: newest `updateTime` first, then newest `_id`. */
  entries: ListedEntry[];
  byId: Map<string, ListedEntry>;
  /** The team's dataset permission rows: member → dataset → value. */
  rows: Map<string, Map<string, number>>;
  /** What the view weighs (estimated, infra/byte-estimate.ts). */
  bytes: number;
}

/**
 * What the kept views may weigh, besides their count of teams. Folders count toward no plan
 * limit and carry up to ~7 KB of text each, so counts alone let one member make every replica
 * hold as much as they care to create. A team heavier than `perTeam` is read at each request;
 * 10,000 ordinary datasets weigh ~10 MB.
 */
export const DATASET_LIST_CACHE_BYTES = { total: 64 * MiB, perTeam: 16 * MiB } as const;

/** A listed dataset's own cost besides its document (its entry, resource and place in byId). */
const LISTED_DATASET_BYTES = 256;
/** A permission row's cost in the rows map. */
const ROW_BYTES = 64;

export interface DatasetListQuery {
  /** null: the root; an id: that folder's children; absent: the whole team (ignored with a search key). */
  parentId?: string | null;
  types?: readonly string[];
  /** A case-insensitive substring of the name or the intro, over the whole team. */
  searchKey?: string;
}

export interface DatasetListReadModelDeps extends Omit<TeamReadModelOptions<TeamDatasets>, 'stampKey' | 'load' | 'weight'> {
  load(teamId: string): Promise<{ datasets: DatasetRecord[]; rows: Map<string, Map<string, number>> }>;
  toResource(doc: DatasetRecord): PermissionResource;
  /** Bounds on what the kept views weigh (tests lower them). */
  bytes?: { total: number; perTeam: number };
}

const descending = <T>(a: T, b: T) => (a < b ? 1 : a > b ? -1 : 0);
/** MongoDB's descending order: a missing `updateTime` sorts last. */
const updatedAt = (doc: ListedDataset) => (doc.updateTime instanceof Date ? doc.updateTime.getTime() : Number.NEGATIVE_INFINITY);
const byListOrder = (a: ListedEntry, b: ListedEntry) => descending(updatedAt(a.doc), updatedAt(b.doc)) || descending(a.doc._id, b.doc._id);

/**
 * The datasets of a team with their permission rows, per process (two finds per load), kept
 * while the team's stamp `datasets:<teamId>` is unchanged. The dataset repository and the
 * dataset permission service bump it after every write of a dataset document or permission row,
 * so authorisation can judge on it too (dataset-auth.ts).
 */
export function createDatasetListReadModel({ load, toResource, bytes: limits = DATASET_LIST_CACHE_BYTES, ...options }: DatasetListReadModelDeps) {
  return createTeamReadModel<TeamDatasets>({
    ...options,
    stampKey: datasetListStampKey,
    weight: { weigh: (view) => view.bytes, max: limits.total, maxEntry: limits.perTeam },
    load: async (teamId) => {
      const { datasets, rows } = await load(teamId);
      let bytes = 0;
      const entries = datasets.map((doc) => {
        bytes += estimateBytes(doc) + LISTED_DATASET_BYTES;
        return { doc: deepFreeze(doc), resource: toResource(doc) };
      });
      for (const memberRows of rows.values()) bytes += memberRows.size * ROW_BYTES;
      entries.sort(byListOrder);
      return { entries, byId: new Map(entries.map((entry) => [entry.doc._id, entry])), rows, bytes };
    },
  });
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
  return team.entries.filter((entry) => (query.parentId === undefined || (entry.doc.parentId ?? null) === query.parentId) && (!types || types.has(entry.doc.type)));
}

