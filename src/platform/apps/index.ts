import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { RequiredPermission, SerializedPermission } from '../../domain/permission.js';
import { createMongoLocks } from '../../infra/mongo-lock.js';
import { createVersionStamps, LIST_STAMP_LEASE_MS } from '../../infra/version-stamps.js';
import type { AuthContext } from '../auth/types.js';
import { RESOURCE_PERMISSION_INDEXES } from '../permissions/index.js';
import { RETIRED_TREE_CHANGE_INDEXES } from '../permissions/tree-changes.repo.js';
import { registerTreeChangeResume } from '../permissions/tree-change-resume.js';
import { createAppCrud } from './app-crud.service.js';
import { appWorkflowStampKey, createAppDocCache } from './app-doc-cache.js';
import { registerAppInsertResume } from './app-insert-resume.js';
import { APP_INSERT_INDEXES, createAppInsertsRepo } from './app-inserts.repo.js';
import { appListStampKey, createAppListReadModel } from './app-list.read-model.js';
import { createAppPermissionService } from './app-permissions.js';
import { APP_INDEXES, type App, createAppsRepo } from './apps.repo.js';
import { registerAppRoutes } from './apps.routes.js';
import { CHAT_APP_TYPES } from './apps.schema.js';
import { type AppsCore, type AppsDeletedListener, type AppsDeps, createAppsCore, type SavedGraphCheck } from './apps.service.js';
import { registerHttpPluginRoutes } from './http-plugin.routes.js';
import { registerPluginEndpoints } from './system-plugins/plugin-endpoints.routes.js';
import { runSystemPlugin, type SystemPluginContext } from './system-plugins/registry.js';
import { registerSystemPluginRoutes } from './system-plugins/system-plugins.routes.js';
import { registerTemplateRoutes } from './templates/templates.routes.js';
import { APP_VERSION_INDEXES, createVersionsRepo, RETIRED_APP_VERSION_INDEXES } from './versions.repo.js';
import { registerVersionRoutes } from './versions.routes.js';
import { createVersionsService, latestVersionReader, type LatestVersionReader } from './versions.service.js';

/** What other modules (chat, share links) use to read apps; workflow parts come decoded. */
export interface AppsAccess {
  findApp(appId: string): Promise<App | null>;
  /** The app if it is in the team (kept per process under the team's stamps: usually no read). */
  findInTeam(teamId: string, appId: string): Promise<App | null>;
  /** The newest published version (what chat runs), else the app's draft: versions.service.ts, the one reader of that rule. */
  latestVersion: LatestVersionReader;
  /** The app, if it exists in the caller's team and the caller holds the required permission on it. */
  authorize(auth: AuthContext, appId: unknown, required: RequiredPermission, field?: string): Promise<{ app: App; permission: SerializedPermission }>;
  /** `authorize` for a request that changes nothing, whatever level it requires (judged in memory). */
  authorizeToView(auth: AuthContext, appId: unknown, required: RequiredPermission, field?: string): Promise<{ app: App; permission: SerializedPermission }>;
  /**
   * Call after writing something of an app authorised before (a share link, a key, an input
   * guide): once the app is gone meanwhile, removes what it left, the write included, and throws
   * appUnExist (404). See AppsCore.afterDependentWrite.
   */
  confirmDependentWrite(teamId: string, appId: string): Promise<void>;
  /** The same, answering false instead of throwing (a chat turn saved after its answer went out). */
  afterDependentWrite(teamId: string, appId: string): Promise<boolean>;
  /** Subscribes to app deletes: `listener` deletes what its module keeps for the apps. */
  onAppsDeleted(listener: AppsDeletedListener): void;
  /** Marks the app as used now (a chat moves it to the top of the list). */
  touch(teamId: string, appId: string, now: Date): Promise<void>;
  /** Runs a built-in system plugin callback by name (getTime, mathExprVal, fetchUrl, ...). */
  runSystemPlugin(name: string, inputs: Record<string, unknown>, context?: Partial<SystemPluginContext>): Promise<Record<string, unknown>>;
}

/** The apps module's services: what other modules read (`AppsAccess`) and what its routes use. */
export interface AppsModule extends AppsAccess {
  core: AppsCore;
  deps: AppsDeps;
  pluginContext: SystemPluginContext;
  /** What the module's per-process caches hold, in estimated bytes (tests). */
  cacheWeights(): { appDocs: number; publishedVersions: number; appLists: number };
}

declare module 'fastify' {
  interface FastifyInstance {
    apps: AppsModule;
  }
}

/** The apps module's services, decorated on the root instance as `app.apps`. */
export const appsServices = fp(
  async function appsServices(app: FastifyInstance): Promise<void> {
    const db = app.mongo.db;
    app.startup.add('indexes: apps', async () => {
      await app.mongo.ensureIndexes([...APP_INDEXES, ...APP_VERSION_INDEXES, ...APP_INSERT_INDEXES, ...RESOURCE_PERMISSION_INDEXES]);
      // The permission rows' retired index is dropped here only (the datasets module builds the same rows' indexes).
      await app.mongo.dropRetiredIndexes([...RETIRED_APP_VERSION_INDEXES, ...RETIRED_TREE_CHANGE_INDEXES]);
    });
    // Every write that changes a team's list (apps, permission rows) bumps its stamp. A list
    // reads the stamp at most once per lease; a bump waits the lease out, so the next list after
    // a write sees it on every process.
    const stamps = createVersionStamps(db, { leaseMs: LIST_STAMP_LEASE_MS });
    const listChanged = (teamId: string) => stamps.bump(appListStampKey(teamId));
    const apps = createAppsRepo(db, (teamId, what) => stamps.bump(what === 'list' ? appListStampKey(teamId) : appWorkflowStampKey(teamId)));
    const appDocs = createAppDocCache({ stamps, load: (teamId, appId) => apps.findInTeam(teamId, appId) });
    const perms = createAppPermissionService(db, { memberProfiles: app.identity.memberProfiles, onChange: listChanged });
    const appList = createAppListReadModel({
      stamps,
      load: async (teamId) => ({ ...(await apps.listTeam(teamId)), rows: await perms.rows.teamRows(teamId) }),
      toResource: perms.toResource,
    });
    registerTreeChangeResume(app, 'apps', perms);
    const deps: AppsDeps = {
      apps,
      versions: createVersionsRepo(db),
      perms,
      appList,
      appDocs,
      teamLimits: app.teamLimits,
      onDeleted: [],
      inserts: createAppInsertsRepo(db),
      locks: createMongoLocks(db),
      // The system module (model configuration) is registered before this one.
      quoteMaxTokenOf: (model) => app.models.llmModelOrDefault(model)?.quoteMaxToken,
      log: app.log,
    };
    app.teamLimits.countUsing('apps', (teamId) => deps.apps.countByTypes(teamId, CHAT_APP_TYPES));
    // API keys belong to the identity module, which is registered before this one.
    deps.onDeleted.push((teamId, appIds) => app.identity.deleteKeysOfApps(teamId, appIds));
    const pluginContext: SystemPluginContext = {
      fetchOptions: { allowPrivate: app.config.SSRF_ALLOW_PRIVATE, timeoutMs: app.config.OUTBOUND_TIMEOUT_MS, maxBytes: app.config.OUTBOUND_MAX_BYTES },
    };
    const core = createAppsCore(deps);
    const authorizeToView = async (auth: AuthContext, appId: unknown, required: RequiredPermission, field = 'appId') => {
      const { app, permission } = await core.view(auth, appId, required, field);
      return { app, permission };
    };
    registerAppInsertResume(app, core, deps);
    const latestVersion = latestVersionReader(deps.versions, () => app.identity.clock.now());
    app.decorate('apps', {
      core,
      deps,
      pluginContext,
      findApp: (appId: string) => deps.apps.findById(appId),
      findInTeam: (teamId: string, appId: string) => appDocs.findInTeam(teamId, appId),
      latestVersion,
      cacheWeights: () => ({ appDocs: appDocs.weight(), publishedVersions: latestVersion.weight(), appLists: appList.weight() }),
      // A read is judged in memory, as core.authorize does; a write on the database.
      authorize: (auth: AuthContext, appId: unknown, required: RequiredPermission, field = 'appId') =>
        required === 'read' ? authorizeToView(auth, appId, required, field) : core.authorizeWrite(auth, appId, required, field),
      authorizeToView,
      confirmDependentWrite: (teamId: string, appId: string) => core.confirmDependentWrite(teamId, appId),
      afterDependentWrite: (teamId: string, appId: string) => core.afterDependentWrite(teamId, appId),
      onAppsDeleted: (listener: AppsDeletedListener) => void deps.onDeleted.push(listener),
      touch: (teamId: string, appId: string, now: Date) => deps.apps.update(teamId, appId, { updateTime: now }),
      runSystemPlugin: (name: string, inputs: Record<string, unknown>, context?: Partial<SystemPluginContext>) => runSystemPlugin(name, inputs, { ...pluginContext, ...context }),
    } satisfies AppsModule);
  },
  { name: 'platform-apps', dependencies: ['platform-identity', 'platform-team-limits'] },
);

/** The apps module's routes: apps, folders, permissions, versions, plugins, templates. */
export async function appsRoutes(api: FastifyInstance): Promise<void> {
  const { core, deps, pluginContext, latestVersion } = api.apps;
  // The chat module judges what a saved graph may name: it runs the graphs (registered before any route).
  const checkSavedGraph: SavedGraphCheck = (auth, nodes, previous) => api.chat.access.assertSavedGraph(auth, nodes, previous);
  registerAppRoutes(api, createAppCrud(core, deps, checkSavedGraph), core, deps, api.chat.logs);
  registerVersionRoutes(api, createVersionsService(core, deps, checkSavedGraph, latestVersion));
  registerHttpPluginRoutes(api, core, deps, pluginContext.fetchOptions);
  registerTemplateRoutes(api);
  registerSystemPluginRoutes(api, core, latestVersion);
  registerPluginEndpoints(api);
}
