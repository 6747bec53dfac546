import { estimateBytes, MiB } from '../../infra/byte-estimate.js';
import { createTeamDocCache } from '../../infra/team-doc-cache.js';
import type { VersionStamps } from '../../infra/version-stamps.js';
import { appListStampKey } from './app-list.read-model.js';
import type { App } from './apps.repo.js';

/**
 * The version stamp of a team's app workflows: bumped by writes that change an app but not its
 * list (draft saves). With the list stamp it covers every write of an app document.
 */
export const appWorkflowStampKey = (teamId: string) => `app-workflows:${teamId}`;

/** Apps kept per team: a team's most used ones. */
const MAX_APPS_PER_TEAM = 200;

/**
 * What the kept apps may weigh (estimated, infra/byte-estimate.ts). Counts alone allowed 1,000
 * teams × 200 apps of up to ~2 MB each (a workflow and an HTTP plugin's schema can each fill the
 * 1 MB body limit, and decoded JSON weighs ~2× its text), so any member able to create apps could
 * make every replica hold gigabytes. A per-app cap above the largest app a request can write
 * keeps every real app cacheable; a team holds at most a quarter of the whole.
 */
export const APP_DOC_CACHE_BYTES = { total: 48 * MiB, perTeam: 12 * MiB, perDoc: 4 * MiB } as const;

/**
 * Whole app documents as chat and app reads use them (bound keys, share links, team spaces, app
 * detail), kept per process under the team's two stamps (list and workflows, both leased; every
 * write of an app bumps one of them): a warm read costs no database command (infra/team-doc-cache.ts).
 */
export function createAppDocCache(deps: { stamps: VersionStamps; load: (teamId: string, appId: string) => Promise<App | null> }) {
  const cache = createTeamDocCache<App>({
    stamps: deps.stamps,
    stampKeys: (teamId) => [appListStampKey(teamId), appWorkflowStampKey(teamId)],
    load: deps.load,
    teamOf: (app) => app.teamId,
    maxPerTeam: MAX_APPS_PER_TEAM,
    bytes: { weigh: estimateBytes, ...APP_DOC_CACHE_BYTES },
  });
  return {
    /** The app if it exists in the team, else null. */
    findInTeam: (teamId: string, appId: string): Promise<App | null> => cache.find(teamId, appId),
    /** The kept apps' estimated bytes (tests). */
    weight: cache.weight,
  };
}

export type AppDocCache = ReturnType<typeof createAppDocCache>;
