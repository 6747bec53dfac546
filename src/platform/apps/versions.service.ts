/** App versions: what chat runs (the newest published version, else the draft), publish, revert, history. */
import type { z } from 'zod';
import { clampDatasetSearchLimits } from '../../domain/workflow/quote-limits.js';
import { estimateBytes, MiB } from '../../infra/byte-estimate.js';
import { describeError } from '../../infra/database-errors.js';
import { deepFreeze } from '../../infra/deep-freeze.js';
import { Errors } from '../../infra/errors.js';
import { createStampedCache } from '../../infra/stamped-read-model.js';
import { pageSkipLimit } from '../../infra/zod.js';
import type { AuthContext } from '../auth/types.js';
import type { LockHold } from '../../infra/mongo-lock.js';
import { newId } from '../../infra/plain-record.js';
import { type App, type AppPatch, DRAFT_WORKFLOW_FIELDS, type FieldsBefore, fieldsBefore } from './apps.repo.js';
import { type publishInput, type renameVersionInput, type revertInput, type versionListInput, zScheduledTrigger } from './apps.schema.js';
import type { AppsCore, AppsDeps, SavedGraphCheck } from './apps.service.js';
import { simpleWorkflowOf } from './simple-form.js';
import type { AppVersion, VersionsRepo } from './versions.repo.js';

function runnableVersion(version: AppVersion | null, app: App) {
  if (version) return { versionId: version._id, nodes: version.nodes, edges: version.edges, chatConfig: version.chatConfig ?? app.chatConfig ?? {} };
  return { versionId: undefined, nodes: app.modules ?? [], edges: app.edges ?? [], chatConfig: app.chatConfig ?? {} };
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
 * What chat runs: the newest published version, else the app's draft (reference
 * getAppLatestVersion). Each app's published version is kept in process under the app's publish
 * stamp. Publishing writes updateTime and pluginData.nodeVersion (the new version's id) on the
 * app, which every caller has just read: a publish through any replica changes the stamp the
 * next reader sees. Only the published version is cached (versions are immutable); the draft and
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

export type LatestVersionReader = ReturnType<typeof latestVersionReader>;

/** The trigger's fields of a config, the reference's three strings: a version stored before they were validated may hold anything. */
function triggerOf(config: Record<string, unknown> | undefined): App['scheduledTriggerConfig'] | undefined {
  const parsed = zScheduledTrigger.safeParse(config?.scheduledTriggerConfig);
  return parsed.success ? (parsed.data ?? undefined) : undefined;
}

/** A draft write sent, and what its fields held just before it landed (once its answer came). */
interface SentDraft {
  written: AppPatch;
  before?: FieldsBefore;
}

function assertHasVersions(app: App): void {
  if (app.type === 'folder' || app.type === 'httpPlugin') throw Errors.invalidAppType(`App ${app._id} is a ${app.type}; it has no versions`);
}

const listItem = (v: AppVersion) => ({ _id: v._id, appId: v.appId, versionName: v.versionName, time: v.time, isPublish: v.isPublish, tmbId: v.tmbId });

interface Draft {
  nodes: unknown[];
  edges: unknown[];
  chatConfig?: Record<string, unknown>;
  type?: App['type'];
  /** Publish keeps the old trigger when the new config has none; revert takes the version's (or none). */
  keepTrigger: boolean;
}

type NewVersion = Omit<Parameters<VersionsRepo['insert']>[0], 'appId' | 'time'>;

export function createVersionsService(core: AppsCore, deps: AppsDeps, checkSavedGraph: SavedGraphCheck, latestVersion: LatestVersionReader) {
  const now = deps.now ?? (() => new Date());

  /** What makes a version's content the app's draft (and bumps updateTime). */
  const draftPatch = (current: App, draft: Draft & { versionId: string; versionTime: Date }): AppPatch => {
    const trigger = triggerOf(draft.chatConfig);
    return {
      modulesJson: JSON.stringify(draft.nodes),
      edgesJson: JSON.stringify(draft.edges),
      ...(draft.chatConfig ? { chatConfigJson: JSON.stringify(draft.chatConfig) } : {}),
      updateTime: now(),
      version: 'v2',
      ...(draft.type ? { type: draft.type } : {}),
      ...(trigger || !draft.keepTrigger ? { scheduledTriggerConfig: trigger ?? null } : {}),
      pluginData: { ...current.pluginData, nodeVersion: draft.versionId },
      draftVersionTime: draft.versionTime,
      draftWriteId: newId(),
    };
  };

  /**
   * Takes back what a publish or revert wrote before it failed, while it still holds the app's
   * lock: the draft as it was (when its write was sent: it may have landed before its stamp
   * failed), then the new versions. The request answers an error, so its retry must not leave
   * them twice. A holder that lost the lock keeps everything (the draft may be the new holder's).
   * Draft saves (`core/app/update`) do not take the lock, so the draft is set back only where it
   * still holds what this write put there (a workflow's parts all or none): a save landed since
   * is kept. It gets what it held just before this write when the write's answer came (a save
   * landed after the publish read the app included), else the app as read under the lock.
   */
  const takeBackCommit = async (lock: LockHold, current: App, versionIds: string[], draft: SentDraft | undefined) => {
    if (draft) {
      lock.assertHeld();
      const before = draft.before ?? fieldsBefore(current, draft.written);
      const restored = await deps.apps.takeBackWrite(current.teamId, current._id, draft.written, before, DRAFT_WORKFLOW_FIELDS);
      const kept = Object.keys(draft.written).filter((field) => field !== 'draftWriteId' && !restored.includes(field as keyof AppPatch));
      // Unanswered, a write that matches nothing most likely never landed: nothing to tell.
      if (kept.length > 0 && (draft.before || restored.length > 0)) deps.log.info(`app ${current._id}: taking back a failed publish or revert left ${kept.join(', ')} as another write changed them since`);
    }
    await deps.versions.deleteOfApp(current._id, versionIds);
  };

  /**
   * Stores `versions` and makes the last one the draft, alone among the app's changes and on the
   * app as read under the lock: parallel publishes and reverts leave as draft the newest version,
   * the one chat's `latest` picks by time. Each is dated after the draft's own, as replicas' clocks differ.
   */
  const commitVersions = (auth: AuthContext, appId: string, versions: NewVersion[], draft: Draft) =>
    core.withAppLock(auth, appId, 'write', async (current, lock) => {
      const teamId = auth.teamId;
      let time = Math.max(now().getTime(), (current.draftVersionTime?.getTime() ?? 0) + 1);
      const versionIds: string[] = [];
      let draftSent: SentDraft | undefined;
      try {
        for (const version of versions) {
          lock.assertHeld();
          versionIds.push(newId());
          await deps.versions.insert({ ...version, _id: versionIds.at(-1), appId, time: new Date(time++) });
        }
        // Before the draft's write, which bumps the stamp the check reads the app under.
        await core.confirmDependentWrite(teamId, appId);
        lock.assertHeld();
        const sent: SentDraft = { written: draftPatch(current, { ...draft, versionId: versionIds.at(-1) ?? '', versionTime: new Date(time - 1) }) };
        draftSent = sent;
        await deps.apps.update(teamId, appId, sent.written, [], (before) => {
          sent.before = before;
        });
      } catch (error) {
        await takeBackCommit(lock, current, versionIds, draftSent).catch((undo: unknown) => {
          const left = `versions ${versionIds.join(', ') || 'none'}${draftSent ? ' and its draft' : ''}`;
          deps.log.warn(`app ${appId}: taking back a failed publish or revert failed, ${left} may stay: ${describeError(undo)}`);
        });
        throw error;
      }
    });

  const versionOf = async (appId: string, versionId: string) => {
    const version = await deps.versions.findOfApp(appId, versionId);
    if (!version) throw Errors.notFound(`Version ${versionId} of app ${appId} not found`);
    return version;
  };

  return {
    /** Saves (isPublish false) or publishes a version; either way it becomes the draft. */
    async publish(auth: AuthContext, input: z.output<typeof publishInput>): Promise<void> {
      const { app: current } = await core.view(auth, input.appId, 'write');
      assertHasVersions(current);
      const given = (input.nodes.length === 0 ? simpleWorkflowOf(input.type ?? current.type, input) : undefined) ?? input;
      await checkSavedGraph(auth, given.nodes, current.modules);
      const nodes = clampDatasetSearchLimits(given.nodes, deps.quoteMaxTokenOf);
      const edges = given.edges;
      const version = { nodes, edges, chatConfig: input.chatConfig, isPublish: input.isPublish ?? false, versionName: input.versionName ?? '', tmbId: auth.tmbId };
      await commitVersions(auth, input.appId, [version], { nodes, edges, chatConfig: input.chatConfig, type: input.type, keepTrigger: true });
    },

    /** Versions newest first: whole (`full`, editors only: they hold HTTP node headers) or names and times. */
    async page(auth: AuthContext, input: z.output<typeof versionListInput>, full: boolean) {
      await core.authorizeToView(auth, input.appId, full ? 'write' : 'read');
      const { skip, limit } = pageSkipLimit(input.current ?? 1, input.pageSize, input.offset);
      const page = await deps.versions.page(input.appId, skip, limit);
      return { total: page.total, list: full ? page.list : page.list.map(listItem) };
    },

    /** What chat runs, as chat reads it. */
    async latest(auth: AuthContext, appId: string) {
      const { app } = await core.view(auth, appId, 'write');
      const { nodes, edges, chatConfig } = await latestVersion(app);
      return { nodes, edges, chatConfig };
    },

    async detail(auth: AuthContext, appId: string, versionId: string): Promise<AppVersion> {
      await core.authorizeToView(auth, appId, 'write');
      return versionOf(appId, versionId);
    },

    /** Makes an old version the draft; the edit state is kept as a version before it. */
    async revert(auth: AuthContext, input: z.output<typeof revertInput>): Promise<void> {
      const { app: current } = await core.view(auth, input.appId, 'write');
      assertHasVersions(current);
      const target = await versionOf(input.appId, input.versionId);
      // Both graphs become versions (the edit state) or the draft (the target, which may be an
      // earlier revert's edit state): each may newly name only what the reverting editor can read.
      await checkSavedGraph(auth, input.editNodes, current.modules);
      await checkSavedGraph(auth, target.nodes, current.modules);
      const copy = { nodes: target.nodes, edges: target.edges, chatConfig: target.chatConfig };
      await commitVersions(auth, input.appId, [{ nodes: input.editNodes, edges: input.editEdges, chatConfig: input.editChatConfig }, copy], { ...copy, keepTrigger: false });
    },

    async rename(auth: AuthContext, input: z.output<typeof renameVersionInput>): Promise<void> {
      await core.authorize(auth, input.appId, 'write');
      if (!(await deps.versions.rename(input.appId, input.versionId, input.versionName))) {
        throw Errors.notFound(`Version ${input.versionId} of app ${input.appId} not found`);
      }
    },
  };
}

export type VersionsService = ReturnType<typeof createVersionsService>;
