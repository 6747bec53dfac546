import type { FastifyInstance } from 'fastify';
import { estimateBytes, MiB } from '../../infra/byte-estimate.js';
import { deepFreeze } from '../../infra/deep-freeze.js';
import { Errors } from '../../infra/errors.js';
import { createStampedCache } from '../../infra/stamped-read-model.js';
import { pageSkipLimit } from '../../infra/zod.js';
import type { AuthContext } from '../auth/types.js';
import { definePlatformRoute } from '../define-route.js';
import type { App } from './apps.repo.js';
import { appIdInput, publishInput, renameVersionInput, revertInput, versionIdInput, versionListInput, zScheduledTrigger } from './apps.schema.js';
import type { AppsCore, AppsDeps, SavedGraphCheck } from './apps.service.js';
import { simpleWorkflowOf } from './simple-form.js';
import { clampDatasetSearchLimits } from '../../domain/workflow/quote-limits.js';
import type { AppVersion, VersionsRepo } from './versions.repo.js';

const tags = ['app versions'];

function runnableVersion(version: AppVersion | null, app: App) {
  if (version) return { versionId: version._id, nodes: version.nodes, edges: version.edges, chatConfig: version.chatConfig ?? app.chatConfig ?? {} };
  return { versionId: undefined, nodes: app.modules ?? [], edges: app.edges ?? [], chatConfig: app.chatConfig ?? {} };
}

/** What chat runs: the newest published version, else the app's draft (reference getAppLatestVersion). */
export async function latestVersionOf(versions: VersionsRepo, app: App) {
  return runnableVersion(await versions.latestPublished(app._id), app);
}

const PUBLISHED_VERSIONS_CACHED = 1000;
/**
 * What the kept versions may weigh (estimated, infra/byte-estimate.ts): each holds a whole
 * workflow (up to ~2 MB decoded), so 1,000 of them could be gigabytes. A heavier version than
 * `perVersion` (none a request can write) is read from the database at each run.
 */
export const PUBLISHED_VERSION_CACHE_BYTES = { total: 48 * MiB, perVersion: 4 * MiB } as const;
/** A cached published version is read again after this long. */
export const PUBLISHED_VERSION_MAX_AGE_MS = 60_000;

/**
 * latestVersionOf with each app's published version kept in process under the app's publish
 * stamp. Publishing writes updateTime and pluginData.nodeVersion (the new version's id) on the
 * app, which every caller has just read: a publish through any replica changes the stamp the
 * next chat sees. Only the published version is cached (versions are immutable); the draft and
 * chatConfig fallbacks come from the app as read. Cached versions are shared, hence frozen.
 */
export function latestVersionReader(versions: VersionsRepo, now: () => number = Date.now) {
  const published = createStampedCache<App, AppVersion | null>({
    cacheKey: (app) => app._id,
    stampOf: (app) => `${new Date(app.updateTime).getTime()}:${app.pluginData?.nodeVersion ?? ''}`,
    load: async (app) => deepFreeze(await versions.latestPublished(app._id)),
    maxViews: PUBLISHED_VERSIONS_CACHED,
    weight: { weigh: estimateBytes, max: PUBLISHED_VERSION_CACHE_BYTES.total, maxEntry: PUBLISHED_VERSION_CACHE_BYTES.perVersion },
    // Read again after a while even at the same stamp: a publish stopped between writing its
    // version and stamping the app leaves warm replicas on the old version only that long.
    maxAgeMs: PUBLISHED_VERSION_MAX_AGE_MS,
    now,
  });
  const read = async (app: App) => runnableVersion(await published.view(app), app);
  /** The kept versions' estimated bytes (tests). */
  return Object.assign(read, { weight: published.weight });
}

const listItem = (v: AppVersion) => ({ _id: v._id, appId: v.appId, versionName: v.versionName, time: v.time, isPublish: v.isPublish, tmbId: v.tmbId });

export function registerVersionRoutes(app: FastifyInstance, core: AppsCore, deps: AppsDeps, checkSavedGraph: SavedGraphCheck): void {
  const session = ['session'] as const;
  const mustBeWorkflow = (a: App) => {
    if (a.type === 'folder' || a.type === 'httpPlugin') throw Errors.invalidAppType(`App ${a._id} is a ${a.type}; it has no versions`);
  };
  /**
   * Makes a version's content the app's draft and bumps updateTime. Publish keeps the old
   * trigger when the new config has none; revert takes the version's (or none).
   */
  const applyDraft = async (
    teamId: string,
    current: App,
    next: { nodes: unknown[]; edges: unknown[]; chatConfig?: Record<string, unknown>; versionId: string; versionTime: Date; type?: App['type']; keepTrigger: boolean },
  ) => {
    const trigger = triggerOf(next.chatConfig);
    await deps.apps.update(teamId, current._id, {
      modulesJson: JSON.stringify(next.nodes),
      edgesJson: JSON.stringify(next.edges),
      ...(next.chatConfig ? { chatConfigJson: JSON.stringify(next.chatConfig) } : {}),
      updateTime: new Date(),
      version: 'v2',
      ...(next.type ? { type: next.type } : {}),
      ...(trigger || !next.keepTrigger ? { scheduledTriggerConfig: trigger ?? null } : {}),
      pluginData: { ...current.pluginData, nodeVersion: next.versionId },
      draftVersionTime: next.versionTime,
    });
  };
  /**
   * Stores `versions` and makes the last one the draft, alone among the app's changes and on the
   * app as read under the lock: parallel publishes and reverts leave as draft the newest version,
   * the one chat's `latest` picks by time. Each is dated after the draft's own, as replicas' clocks differ.
   */
  const commitVersions = (
    auth: AuthContext,
    appId: string,
    versions: Omit<Parameters<VersionsRepo['insert']>[0], 'appId' | 'time'>[],
    draft: Omit<Parameters<typeof applyDraft>[2], 'versionId' | 'versionTime'>,
  ) =>
    core.withAppLock(auth, appId, 'write', async (current, lock) => {
      const teamId = auth.teamId;
      let time = Math.max(Date.now(), (current.draftVersionTime?.getTime() ?? 0) + 1);
      let versionId = '';
      for (const version of versions) {
        lock.assertHeld();
        versionId = await deps.versions.insert({ ...version, appId, time: new Date(time++) });
      }
      // Before the draft's write, which bumps the stamp the check reads the app under.
      await core.confirmDependentWrite(teamId, appId);
      lock.assertHeld();
      await applyDraft(teamId, current, { ...draft, versionId, versionTime: new Date(time - 1) });
    });
  /** The trigger's fields of a config, the reference's three strings: a version stored before they were validated may hold anything. */
  const triggerOf = (config: Record<string, unknown> | undefined): App['scheduledTriggerConfig'] | undefined => {
    const parsed = zScheduledTrigger.safeParse(config?.scheduledTriggerConfig);
    return parsed.success ? (parsed.data ?? undefined) : undefined;
  };
  const versionOf = async (appId: string, versionId: string) => {
    const version = await deps.versions.findOfApp(appId, versionId);
    if (!version) throw Errors.notFound(`Version ${versionId} of app ${appId} not found`);
    return version;
  };

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/app/version/publish',
    auth: session,
    input: publishInput,
    summary: 'Save (isPublish false) or publish a version of the workflow',
    tags,
    handler: async ({ input, auth }) => {
      const { app: current } = await core.view(auth, input.appId, 'write');
      mustBeWorkflow(current);
      const given = (input.nodes.length === 0 ? simpleWorkflowOf(input.type ?? current.type, input) : undefined) ?? input;
      await checkSavedGraph(auth, given.nodes, current.modules);
      const nodes = clampDatasetSearchLimits(given.nodes, deps.quoteMaxTokenOf);
      const edges = given.edges;
      const version = { nodes, edges, chatConfig: input.chatConfig, isPublish: input.isPublish ?? false, versionName: input.versionName ?? '', tmbId: auth.tmbId };
      await commitVersions(auth, input.appId, [version], { nodes, edges, chatConfig: input.chatConfig, type: input.type, keepTrigger: true });
      return {};
    },
  });

  for (const url of ['/core/app/version/list', '/core/app/version/listWorkflow', '/core/app/version/listWorkflowx']) {
    const full = url.endsWith('/list');
    definePlatformRoute(app, {
      methods: ['GET', 'POST'],
      url,
      auth: session,
      input: versionListInput,
      summary: full ? 'Versions of an app, newest first (full documents; write needed)' : 'Workflow edit history, newest first (names and times only)',
      tags,
      handler: async ({ input, auth }) => {
        // Full versions hold the workflow (HTTP node headers included): editors only, as the editable detail.
        await core.authorizeToView(auth, input.appId, full ? 'write' : 'read');
        const { skip, limit } = pageSkipLimit(input.current ?? 1, input.pageSize, input.offset);
        const page = await deps.versions.page(input.appId, skip, limit);
        return { total: page.total, list: full ? page.list : page.list.map(listItem) };
      },
    });
  }

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/app/version/latest',
    auth: session,
    input: appIdInput,
    summary: 'The newest published version (what chat runs), else the draft',
    tags,
    handler: async ({ input, auth }) => {
      const { app } = await core.view(auth, input.appId, 'write');
      const { nodes, edges, chatConfig } = await latestVersionOf(deps.versions, app);
      return { nodes, edges, chatConfig };
    },
  });

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/app/version/detail',
    auth: session,
    input: versionIdInput,
    summary: 'One version of the app (its full workflow; write needed)',
    tags,
    handler: async ({ input, auth }) => {
      await core.authorizeToView(auth, input.appId, 'write');
      return versionOf(input.appId, input.versionId);
    },
  });

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/app/version/revert',
    auth: session,
    input: revertInput,
    summary: 'Make an old version the current draft (the edit state is kept as a version)',
    tags,
    handler: async ({ input, auth }) => {
      const { app: current } = await core.view(auth, input.appId, 'write');
      mustBeWorkflow(current);
      const target = await versionOf(input.appId, input.versionId);
      // Both graphs become versions (the edit state) or the draft (the target, which may be an
      // earlier revert's edit state): each may newly name only what the reverting editor can read.
      await checkSavedGraph(auth, input.editNodes, current.modules);
      await checkSavedGraph(auth, target.nodes, current.modules);
      const copy = { nodes: target.nodes, edges: target.edges, chatConfig: target.chatConfig };
      await commitVersions(auth, input.appId, [{ nodes: input.editNodes, edges: input.editEdges, chatConfig: input.editChatConfig }, copy], { ...copy, keepTrigger: false });
      return {};
    },
  });

  definePlatformRoute(app, {
    methods: ['POST', 'PUT', 'GET'],
    url: '/core/app/version/update',
    auth: session,
    input: renameVersionInput,
    summary: 'Rename a version',
    tags,
    handler: async ({ input, auth }) => {
      await core.authorize(auth, input.appId, 'write');
      if (!(await deps.versions.rename(input.appId, input.versionId, input.versionName))) {
        throw Errors.notFound(`Version ${input.versionId} of app ${input.appId} not found`);
      }
      return {};
    },
  });
}
