import type { PermissionResource } from '../../domain/permission.js';
import { AnswerMemo } from '../../infra/answer-memo.js';
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
}

/** Answers kept per team version: one per member and query actually asked, the oldest dropped. */
const MAX_ANSWERS = 32;

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
  return createTeamReadModel<TeamAppList>({
    stamps: deps.stamps,
    stampKey: appListStampKey,
    maxTeams: deps.maxTeams,
    maxAgeMs: deps.maxAgeMs,
    now: deps.now,
    async load(teamId) {
      const { apps, rows } = await deps.load(teamId);
      const listed = apps.map((doc) => {
        const resource = deps.toResource(doc);
        const updatedAt = doc.updateTime instanceof Date ? doc.updateTime.getTime() : Number.NEGATIVE_INFINITY;
        return { doc, id: resource.id, parentId: resource.parentId, tmbId: resource.ownerTmbId, updatedAt, resource };
      });
      listed.sort(byListOrder);
      return { apps: listed, byId: new Map(listed.map((app) => [app.id, app])), rows, answers: new AnswerMemo(MAX_ANSWERS) };
    },
  });
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
