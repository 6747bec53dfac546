import type { PermissionResource } from '../../domain/permission.js';
import { AnswerMemo } from '../../infra/answer-memo.js';
import { estimateBytes, MiB } from '../../infra/byte-estimate.js';
import { escapeRegex } from '../../infra/mongo.js';
import { createTeamReadModel } from '../../infra/stamped-read-model.js';
import type { VersionStamps } from '../../infra/version-stamps.js';
import type { AppListDoc } from './apps.repo.js';
import type { AppType } from './apps.schema.js';

/** The version stamp of a team's app list: bumped by every write that changes what it shows. */
export const appListStampKey = (teamId: string) => `apps:${teamId}`;

/** One app of the team with what every request needs computed once per load. */
export interface ListedApp {
  doc: AppListDoc;
  id: string;
  parentId: string | null;
  tmbId: string;
  /** `updateTime` in ms; an app without one sorts last, as MongoDB sorts a missing value. */
  updatedAt: number;
  resource: PermissionResource;
}

/** A team's app list as loaded: what `core/app/list` filters and judges per request. */
export interface TeamAppList {
  /** In the list's order: newest `updateTime` first, then newest `_id`. */
  apps: ListedApp[];
  byId: Map<string, ListedApp>;
  /** The team's app permission rows: member → app → value. */
  rows: Map<string, Map<string, number>>;
  /** Serialised list answers of this version, by caller and query (they die with it). */
  answers: AnswerMemo;
  /** The estimated bytes of the apps and rows, the answers not included. */
  bytes: number;
}

/** Answers kept per team version: one per member and query actually asked, the oldest dropped. */
const MAX_ANSWERS = 32;

/**
 * What the kept lists and their answers may weigh (estimated, infra/byte-estimate.ts). Every app
 * is listed with its `pluginData`, an HTTP plugin's whole schema included (up to ~1 MB each), and
 * HTTP plugins and folders are outside the plan's app limit: counts alone let one member make
 * every replica hold gigabytes. A team whose list (with its answers) would weigh more than
 * `perTeam` is read from the database at each request; 10,000 ordinary apps weigh ~8 MB.
 */
export const APP_LIST_CACHE_BYTES = { total: 64 * MiB, perTeam: 16 * MiB, answersPerTeam: 4 * MiB } as const;

/** A listed app's own cost besides its document (the ListedApp, its resource, its place in byId). */
const LISTED_APP_BYTES = 256;
/** A permission row's cost in the rows map. */
const ROW_BYTES = 64;

export interface AppListQuery {
  /** undefined: the whole team; null: the root; else that folder's children. */
  parentId?: string | null;
  types?: readonly AppType[];
  searchKey?: string;
  limit: number;
}

export interface AppListReadModelDeps {
  stamps: VersionStamps;
  load(teamId: string): Promise<{ apps: AppListDoc[]; rows: Map<string, Map<string, number>> }>;
  toResource(doc: AppListDoc): PermissionResource;
  /** Teams kept, least recently used dropped first. */
  maxTeams?: number;
  /** Bounds on what the kept lists weigh, besides their count (tests lower them). */
  bytes?: { total: number; perTeam: number; answersPerTeam: number };
  /** A safety net: a list older than this is loaded again even if its stamp did not move (a bump lost to a failure). */
  maxAgeMs?: number;
  now?: () => number;
}

const descending = <T>(a: T, b: T) => (a < b ? 1 : a > b ? -1 : 0);
const byListOrder = (a: ListedApp, b: ListedApp) => descending(a.updatedAt, b.updatedAt) || descending(a.id, b.id);

/**
 * The apps of a team as a per-process read model: loaded with two finds (apps by `teamId`, the
 * team's permission rows), kept while the team's version stamp is unchanged (one `_id` read per
 * request), keyed by team so no request ever sees another team's apps. Writers bump the stamp
 * through `changed` after writing, so the next request on any process loads again.
 */
export function createAppListReadModel(deps: AppListReadModelDeps) {
  const limits = deps.bytes ?? APP_LIST_CACHE_BYTES;
  const model = createTeamReadModel<TeamAppList>({
    stamps: deps.stamps,
    stampKey: appListStampKey,
    maxTeams: deps.maxTeams,
    // A list is weighed with its answers, which grow after it is kept (reweighed as they do).
    weight: { weigh: (list) => list.bytes + list.answers.weight, max: limits.total, maxEntry: limits.perTeam },
    maxAgeMs: deps.maxAgeMs,
    now: deps.now,
    async load(teamId) {
      const { apps, rows } = await deps.load(teamId);
      let bytes = 0;
      const listed = apps.map((doc) => {
        const resource = deps.toResource(doc);
        const updatedAt = doc.updateTime instanceof Date ? doc.updateTime.getTime() : Number.NEGATIVE_INFINITY;
        bytes += estimateBytes(doc) + LISTED_APP_BYTES;
        return { doc, id: resource.id, parentId: resource.parentId, tmbId: resource.ownerTmbId, updatedAt, resource };
      });
      for (const member of rows.values()) bytes += member.size * ROW_BYTES;
      listed.sort(byListOrder);
      // Answers fit in what the list leaves of its team's share, so they never push a kept list out.
      const answersMax = Math.min(limits.answersPerTeam, limits.perTeam - bytes);
      const list: TeamAppList = {
        apps: listed,
        byId: new Map(listed.map((app) => [app.id, app])),
        rows,
        bytes,
        answers: new AnswerMemo(MAX_ANSWERS, { weigh: (answer) => answer.length, max: answersMax, onChange: () => model.reweigh(teamId, list) }),
      };
      return list;
    },
  });
  return model;
}

export type AppListReadModel = ReturnType<typeof createAppListReadModel>;

/**
 * The apps a list query selects, in list order, before permissions: the same semantics as the
 * former MongoDB query (`parentId: null` matches a missing parent too; `searchKey` is a
 * case-insensitive substring of the name or the intro, as `$regex` on the escaped key with `i`;
 * the limit applies before unreadable apps are dropped).
 */
export function selectApps(list: TeamAppList, query: AppListQuery): ListedApp[] {
  const types = query.types ? new Set<string>(query.types) : undefined;
  const pattern = query.searchKey ? new RegExp(escapeRegex(query.searchKey), 'i') : undefined;
  const matches = (text: unknown) => typeof text === 'string' && (pattern as RegExp).test(text);
  const out: ListedApp[] = [];
  for (const app of list.apps) {
    if (out.length >= query.limit) break;
    if (query.parentId !== undefined && app.parentId !== query.parentId) continue;
    if (types && !types.has(app.doc.type)) continue;
    if (pattern && !matches(app.doc.name) && !matches(app.doc.intro)) continue;
    out.push(app);
  }
  return out;
}
