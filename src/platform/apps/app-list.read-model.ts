import type { PermissionResource } from '../../domain/permission.js';
import { AnswerMemo } from '../../infra/answer-memo.js';
import { estimateBytes, MiB } from '../../infra/byte-estimate.js';
import { escapeRegex } from '../../infra/mongo.js';
import { LruMap } from '../../infra/lru-map.js';
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
  /** Its stored pluginData holds an HTTP plugin's schema or headers, not loaded here (apps.repo.ts HEAVY_PLUGIN_FIELDS). */
  hasPluginSchema: boolean;
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
 * What the kept lists and their answers may weigh (estimated, infra/byte-estimate.ts). Lists hold
 * no HTTP plugin schema (read only for the answers that show one), but HTTP plugins and folders
 * are outside the plan's app limit: counts alone let one member make every replica hold
 * gigabytes. A team whose list (with its answers) would weigh more than `perTeam` is read from
 * the database at each request; 10,000 ordinary apps weigh ~8 MB.
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
  /** The team's apps without their heavy plugin fields, the ids of those that have some (none when absent), and the permission rows. */
  load(teamId: string): Promise<{ apps: AppListDoc[]; withPluginSchema?: ReadonlySet<string>; rows: Map<string, Map<string, number>> }>;
  toResource(doc: AppListDoc): PermissionResource;
  /** Teams kept, least recently used dropped first. */
  maxTeams?: number;
  /** Bounds on what the kept lists weigh, besides their count (tests lower them). */
  bytes?: { total: number; perTeam: number; answersPerTeam: number };
  /** A safety net: a list older than this is loaded again even if its stamp did not move (a bump lost to a failure). */
  maxAgeMs?: number;
  now?: () => number;
}

/** The read model's default safety net (infra/stamped-read-model.ts). */
const DEFAULT_MAX_AGE_MS = 5 * 60_000;

const descending = <T>(a: T, b: T) => (a < b ? 1 : a > b ? -1 : 0);
const byListOrder = (a: ListedApp, b: ListedApp) => descending(a.updatedAt, b.updatedAt) || descending(a.id, b.id);

/**
 * The apps of a team as a per-process read model: loaded with three finds (apps by `teamId`
 * without their heavy plugin fields, the ids of those that have some, the team's permission
 * rows), kept while the team's version stamp is unchanged (one `_id` read per request), keyed
 * by team so no request ever sees another team's apps. Writers bump the stamp
 * through `changed` after writing, so the next request on any process loads again.
 */
export function createAppListReadModel(deps: AppListReadModelDeps) {
  // Fixed when the model is made (a test makes one instance under lowered defaults).
  const limits = { ...(deps.bytes ?? APP_LIST_CACHE_BYTES) };
  const now = deps.now ?? (() => Date.now());
  const maxAgeMs = deps.maxAgeMs ?? DEFAULT_MAX_AGE_MS;
  /** Teams whose list, last loaded, weighed more than their share (not kept), with when. */
  const unkept = new LruMap<number>(deps.maxTeams ?? 1000);
  const model = createTeamReadModel<TeamAppList>({
    stamps: deps.stamps,
    stampKey: appListStampKey,
    maxTeams: deps.maxTeams,
    // A list is weighed with its answers, which grow after it is kept (reweighed as they do).
    weight: { weigh: (list) => list.bytes + list.answers.weight, max: limits.total, maxEntry: limits.perTeam },
    maxAgeMs: deps.maxAgeMs,
    now: deps.now,
    async load(teamId) {
      const { apps, withPluginSchema, rows } = await deps.load(teamId);
      let bytes = 0;
      const listed = apps.map((doc) => {
        const resource = deps.toResource(doc);
        const updatedAt = doc.updateTime instanceof Date ? doc.updateTime.getTime() : Number.NEGATIVE_INFINITY;
        bytes += estimateBytes(doc) + LISTED_APP_BYTES;
        return { doc, id: resource.id, parentId: resource.parentId, tmbId: resource.ownerTmbId, updatedAt, resource, hasPluginSchema: withPluginSchema?.has(resource.id) === true };
      });
      for (const member of rows.values()) bytes += member.size * ROW_BYTES;
      if (bytes > limits.perTeam) unkept.set(teamId, now());
      else unkept.delete(teamId);
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
  return {
    ...model,
    /**
     * Whether the team's list, when last loaded (within `maxAgeMs`), was too heavy to keep: one
     * app is then better judged on its own than by loading the whole list again (see
     * core.authorizeToView). Past `maxAgeMs` the next read loads the list and learns again.
     */
    tooHeavyToKeep(teamId: string): boolean {
      const since = unkept.peek(teamId);
      return since !== undefined && now() - since >= 0 && now() - since < maxAgeMs;
    },
  };
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
