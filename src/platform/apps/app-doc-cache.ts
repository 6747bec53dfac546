import { deepFreeze } from '../../infra/deep-freeze.js';
import { LruMap } from '../../infra/lru-map.js';
import type { VersionStamps } from '../../infra/version-stamps.js';
import { appListStampKey } from './app-list.read-model.js';
import type { App } from './apps.repo.js';

/**
 * The version stamp of a team's app workflows: bumped by writes that change an app but not its
 * list (draft saves). With the list stamp it covers every write of an app document.
 */
export const appWorkflowStampKey = (teamId: string) => `app-workflows:${teamId}`;

const MAX_TEAMS = 1000;
const MAX_APPS_PER_TEAM = 200;

/**
 * Whole app documents as chat runs them (bound keys, share links, team spaces), kept per process
 * under the team's two stamps (list and workflows, both leased): a warm read costs no database
 * command. The stamps are read before the document, so what is kept under them is at least as
 * new as they are; every write of an app bumps one of them and waits the lease out, so the next
 * read on any process sees it. Kept documents are shared, hence frozen.
 */
export function createAppDocCache(deps: { stamps: VersionStamps; load: (teamId: string, appId: string) => Promise<App | null> }) {
  const teams = new LruMap<{ version: string; apps: Map<string, App> }>(MAX_TEAMS);

  return {
    /** The app if it exists in the team, else null. */
    async findInTeam(teamId: string, appId: string): Promise<App | null> {
      const [list, workflows] = await Promise.all([deps.stamps.read(appListStampKey(teamId)), deps.stamps.read(appWorkflowStampKey(teamId))]);
      const version = `${list}|${workflows}`;
      let team = teams.get(teamId);
      if (team?.version !== version) {
        team = { version, apps: new Map() };
        teams.set(teamId, team);
      }
      const kept = team.apps.get(appId);
      if (kept) return kept;
      const found = await deps.load(teamId, appId);
      if (found && team.apps.size < MAX_APPS_PER_TEAM) team.apps.set(appId, deepFreeze(found));
      return found;
    },
  };
}

export type AppDocCache = ReturnType<typeof createAppDocCache>;
