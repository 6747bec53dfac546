import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { RESOURCE_PERMISSION_INDEXES } from '../permissions/index.js';
import { createAppPermissionService } from './app-permissions.js';
import { createAppCrud } from './app-crud.service.js';
import { APP_INDEXES, type App, createAppsRepo } from './apps.repo.js';
import { registerAppRoutes } from './apps.routes.js';
import { type AppsDeps, createAppsCore } from './apps.service.js';
import { createChatLogsRepo } from './chat-logs.repo.js';
import { registerHttpPluginRoutes } from './http-plugin.routes.js';
import { registerPluginEndpoints } from './system-plugins/plugin-endpoints.routes.js';
import { registerSystemPluginRoutes } from './system-plugins/system-plugins.routes.js';
import { runSystemPlugin, type SystemPluginContext } from './system-plugins/registry.js';
import { registerTemplateRoutes } from './templates/templates.routes.js';
import { APP_VERSION_INDEXES, createVersionsRepo } from './versions.repo.js';
import { latestVersionOf, registerVersionRoutes } from './versions.routes.js';

/** What other modules (chat, share links) use to read apps; workflow parts come decoded. */
export interface AppsAccess {
  findApp(appId: string): Promise<App | null>;
  /** The newest published version (what chat runs), else the app's draft. */
  latestVersion(app: App): Promise<{ versionId?: string; nodes: Record<string, unknown>[]; edges: Record<string, unknown>[]; chatConfig: Record<string, unknown> }>;
  /** Runs a built-in system plugin callback by name (getTime, mathExprVal, fetchUrl, ...). */
  runSystemPlugin(name: string, inputs: Record<string, unknown>, context?: Partial<SystemPluginContext>): Promise<Record<string, unknown>>;
}

declare module 'fastify' {
  interface FastifyInstance {
    appsAccess: AppsAccess;
  }
}

const byDatabase = new WeakMap<object, AppsAccess>();

/** The apps access of a built app, from outside the /api context (tests, benchmarks, CLI). */
export function appsAccessOf(app: FastifyInstance): AppsAccess {
  const access = byDatabase.get(app.mongo.db);
  if (!access) throw new Error('The apps module is not registered on this app');
  return access;
}

/** The apps module of the platform API: apps, folders, permissions, versions, plugins, templates. */
export default fp(
  async function appsModule(app: FastifyInstance): Promise<void> {
    const db = app.mongo.db;
    app.startup.add('indexes: apps', () => app.mongo.ensureIndexes([...APP_INDEXES, ...APP_VERSION_INDEXES, ...RESOURCE_PERMISSION_INDEXES]));
    const perms = createAppPermissionService(db);
    const deps: AppsDeps = { apps: createAppsRepo(db), versions: createVersionsRepo(db), perms, teamLimits: () => app.teamLimits };
    const core = createAppsCore(deps);
    const pluginContext: SystemPluginContext = {
      db,
      fetchOptions: { allowPrivate: app.config.SSRF_ALLOW_PRIVATE, timeoutMs: app.config.OUTBOUND_TIMEOUT_MS, maxBytes: app.config.OUTBOUND_MAX_BYTES },
    };
    const access: AppsAccess = {
      findApp: (appId: string) => deps.apps.findById(appId),
      latestVersion: (found: App) => latestVersionOf(deps.versions, found),
      runSystemPlugin: (name: string, inputs: Record<string, unknown>, context?: Partial<SystemPluginContext>) => runSystemPlugin(name, inputs, { ...pluginContext, ...context }),
    };
    app.decorate('appsAccess', access);
    byDatabase.set(db, access);

    await app.register(async (scope) => {
      registerAppRoutes(scope, createAppCrud(core, deps), core, deps, createChatLogsRepo(db));
      registerVersionRoutes(scope, core, deps);
      registerHttpPluginRoutes(scope, core, deps, pluginContext.fetchOptions);
      registerTemplateRoutes(scope);
      registerSystemPluginRoutes(scope, core, deps);
      registerPluginEndpoints(scope, pluginContext);
    });
  },
  { name: 'platform-apps' },
);
