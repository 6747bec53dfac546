import type { FastifyBaseLogger } from 'fastify';
import type { RequiredPermission, SerializedPermission } from '../../domain/permission.js';
import { allDescendants } from '../../domain/permission-inheritance.js';
import { describeError } from '../../infra/database-errors.js';
import { Errors } from '../../infra/errors.js';
import { withFollowUp } from '../../infra/follow-up.js';
import { withLeaseRenewal } from '../../infra/lease-renewal.js';
import { type LockHold, LockLostError, type MongoLocks } from '../../infra/mongo-lock.js';
import type { AuthContext } from '../auth/types.js';
import type { TeamLimits } from '../identity/team-limits-types.js';
import { assertTeamPermission, type Authorized, type ResourcePermissionService } from '../permissions/resource-permission.service.js';
import type { AppDocCache } from './app-doc-cache.js';
import { APP_INSERT_LEASE_MS, type AppInsertsRepo } from './app-inserts.repo.js';
import type { AppListReadModel, TeamAppList } from './app-list.read-model.js';
import { type App, type AppDoc, type AppListDoc, type AppsRepo, decodeApp, encodeWorkflow } from './apps.repo.js';
import { APP_FOLDER_TYPES, type AppType, CHAT_APP_TYPES } from './apps.schema.js';
import type { VersionsRepo } from './versions.repo.js';

export type AppsDeletedListener = (teamId: string, appIds: string[]) => Promise<void>;

export interface AppsDeps {
  apps: AppsRepo;
  versions: VersionsRepo;
  perms: ResourcePermissionService;
  /** The team app lists served by `core/app/list` (its stamp is bumped by the repos' writes). */
  appList: AppListReadModel;
  /** Whole apps kept per process under the team's stamps (what reads show and chat runs). */
  appDocs: AppDocCache;
  teamLimits: TeamLimits;
  /**
   * What other modules delete with an app (chats, share links, keys), each through its own
   * repository; run before the app documents go, so a crash midway leaves no orphan, and once
   * more after (what a request that checked the app before it went wrote meanwhile).
   */
  onDeleted: AppsDeletedListener[];
  /** App inserts in progress (crash safety of creates and copies). */
  inserts: AppInsertsRepo;
  /** Named locks shared by every process (`core.withAppLock`). */
  locks: Pick<MongoLocks, 'withLock'>;
  /** A chat model's quote budget (`quoteMaxToken`; the default model's for an unknown one), for saved workflows. */
  quoteMaxTokenOf: (model: unknown) => number | undefined;
  /** Where clean-ups that failed after a failure are told (what they left, by id). */
  log: Pick<FastifyBaseLogger, 'info' | 'warn'>;
  now?: () => Date;
}

/**
 * Checks a graph about to be saved against the app's current one: what it newly names (datasets,
 * apps) the saver must be able to read (the chat module's rule, chat-access.ts assertSavedGraph).
 */
export type SavedGraphCheck = (auth: AuthContext, nodes: readonly unknown[], previous: readonly unknown[]) => Promise<void>;

const APP_BUSY = 'Another change to this app is in progress, try again';

export const isFolderType = (type: string) => APP_FOLDER_TYPES.includes(type as AppType);
export const DEFAULT_APP_AVATAR = '/icon/logo.svg';
export const FOLDER_AVATAR = '/imgs/files/folder.svg';

export interface NewApp {
  parentId: string | null;
  name: string;
  type: AppType;
  avatar?: string;
  intro?: string;
  modules?: Record<string, unknown>[];
  edges?: Record<string, unknown>[];
  chatConfig?: Record<string, unknown>;
  pluginData?: AppDoc['pluginData'];
  /** Owner; defaults to the caller. */
  tmbId?: string;
}

/** Room taken in the team's app limit; inserts and deletes record what they counted (+1 / -n). */
export interface AppRoom {
  counted(delta: number): void;
}

export function createAppsCore(deps: AppsDeps) {
  const now = deps.now ?? (() => new Date());

  const core = {
    assertTeam: (auth: AuthContext, required: 'read' | 'write') => assertTeamPermission(auth, required),

    /**
     * The caller's permission on an app. Reads are judged on the team's list read model: the same
     * rules and errors as reading the app and the member's rows, and no command while the list's
     * stamp is unchanged. Every write that changes an app's place or permissions bumps that stamp
     * and waits its lease out, so the next request on any process is judged on the change (an id
     * outside the caller's team's list is read from the database for its exact error: 400, 404,
     * or 403 for another team's app). Writes are judged on the database: an app deleted by a
     * process that died before its bump must not take new versions or copies meanwhile.
     */
    async authorize(auth: AuthContext, appId: unknown, required: RequiredPermission, field = 'appId'): Promise<Authorized<AppListDoc>> {
      if (required !== 'read') return deps.perms.authorize<AppListDoc>(auth, appId, required, field);
      return core.authorizeToView(auth, appId, required, field);
    },

    /**
     * `authorize` for a request that changes nothing, whatever level it requires (chat logs and
     * versions need write, a share-link list manage): judged on the list read model, as reads
     * are; the crash window that keeps writes on the database does not concern what only reads.
     */
    async authorizeToView(auth: AuthContext, appId: unknown, required: RequiredPermission, field = 'appId'): Promise<Authorized<AppListDoc>> {
      // A list too heavy to keep would be loaded whole again for each app judged.
      // On the database then: the app, the folder it inherits from and the caller's rows of the two.
      if (deps.appList.tooHeavyToKeep(auth.teamId)) return deps.perms.authorize<AppListDoc>(auth, appId, required, field, (ids) => deps.apps.findListed(auth.teamId, ids));
      return core.authorizeIn(await deps.appList.team(auth.teamId), auth, appId, required, field);
    },

    /**
     * `authorize` for a write (judged on the database, see above) and the app it read there,
     * decoded and fresh: one read of the app, not a second one to use it.
     */
    async authorizeWrite(auth: AuthContext, appId: unknown, required: Exclude<RequiredPermission, 'read'>, field = 'appId'): Promise<{ app: App; permission: SerializedPermission }> {
      const { doc, permission } = await deps.perms.authorize<AppDoc>(auth, appId, required, field);
      return { app: decodeApp(doc), permission };
    },

    /** `authorize` on a version of the team's list the caller already holds (a list request's). */
    authorizeIn: (team: TeamAppList, auth: AuthContext, appId: unknown, required: RequiredPermission, field = 'appId'): Promise<Authorized<AppListDoc>> =>
      deps.perms.authorizeIn(team, auth, appId, required, field),

    /** `authorizeToView` with the app it judged, decoded, from the per-process cache (shared and frozen). */
    async view(auth: AuthContext, appId: unknown, required: RequiredPermission, field = 'appId'): Promise<Authorized<AppListDoc> & { app: App }> {
      const authorized = await core.authorizeToView(auth, appId, required, field);
      return { ...authorized, app: await core.read(auth, authorized.doc._id) };
    },

    /** The decoded app after an authorisation, from the per-process cache: shared and frozen, for reads. */
    async read(auth: AuthContext, appId: string): Promise<App> {
      const app = await deps.appDocs.findInTeam(auth.teamId, appId);
      if (!app) throw Errors.appUnExist(`App ${appId} not found`);
      return app;
    },

    /** A parent for new content must be a folder the caller can write. */
    async assertWritableParent(auth: AuthContext, parentId: string | null | undefined): Promise<void> {
      if (!parentId) return;
      const parent = await core.authorize(auth, parentId, 'write', 'parentId');
      if (!isFolderType(parent.doc.type)) throw Errors.missingParams(`Invalid field 'parentId': ${parentId} is not a folder`);
    },

    /** What every new app asks of its creator, whatever route makes it: team write, and write on its folder. */
    async assertMayCreateIn(auth: AuthContext, parentId: string | null | undefined): Promise<void> {
      assertTeamPermission(auth, 'write');
      await core.assertWritableParent(auth, parentId);
    },

    /**
     * Runs `run` with room for `reserve` more apps taken in the team's plan limit in one atomic
     * step (parallel creates cannot pass it together; 403 appAmountNotEnough). Inserts and
     * deletes given the room record what they counted; what was not used, or was freed, is
     * given back at the end, failure or not.
     */
    async withAppRoom<T>(teamId: string, reserve: number, run: (room: AppRoom) => Promise<T>): Promise<T> {
      if (reserve > 0) await deps.teamLimits.reserveApps(teamId, reserve);
      let change = 0;
      try {
        return await run({
          counted: (delta) => {
            change += delta;
          },
        });
      } finally {
        if (reserve - change > 0) await releaseRoom(teamId, reserve - change);
      }
    },

    /**
     * Inserts an app (with its initial version, or a folder's copied permission rows). Write
     * order: plan room (when it counts and no `room` is given) → an `app_inserts` record → rows →
     * version → the app document, last, in one insert: until then nothing of the app can be
     * listed or read, and after it the app is whole. A crash before it is settled (settleInsert):
     * what was written goes, the room comes back. A failure answers an error, so nothing of the
     * insert stays for the client's retry to make twice (takeBackInsert), even once the app
     * document landed and a later step failed (its list stamp, say). An app
     * that counts toward the plan limit inside a caller's `room` is recorded there (see withAppRoom).
     */
    async insertApp(auth: AuthContext, input: NewApp, room?: AppRoom): Promise<string> {
      const teamId = auth.teamId;
      const counted = core.countsTowardLimit(input.type);
      const reserved = counted && !room ? 1 : 0;
      if (reserved) await deps.teamLimits.reserveApps(teamId, reserved);
      const appId = deps.apps.newId();
      try {
        await deps.inserts.open(appId, teamId, reserved);
      } catch (error) {
        if (reserved) await releaseRoom(teamId, reserved);
        throw error;
      }
      try {
        await withLeaseRenewal(APP_INSERT_LEASE_MS / 3, () => deps.inserts.renew(appId), () => writeApp(auth, appId, input));
      } catch (error) {
        // Failing here too leaves the record: the start-up and the sweep settle it.
        await takeBackInsert({ appId, teamId, reserved }, counted ? room : undefined).catch((undo: unknown) => {
          deps.log.warn(`app ${appId} of team ${teamId}: taking back a failed insert failed, left to the insert sweep: ${describeError(undo)}`);
        });
        throw error;
      }
      if (counted) room?.counted(1);
      // The app is whole; a record left behind by a failure here is settled as kept.
      await deps.inserts.close(appId).catch((error: unknown) => {
        deps.log.warn(`app ${appId} of team ${teamId}: closing its insert record failed, left to the insert sweep (the app is kept): ${describeError(error)}`);
      });
      return appId;
    },

    /**
     * Settles an insert that did not finish (its record is still there): kept when its app
     * document landed (the last write), else its rows and versions removed and its own plan
     * room given back, once (only by whoever deletes the record).
     */
    async settleInsert(insert: { appId: string; teamId: string; reserved: number }): Promise<void> {
      const { appId, teamId, reserved } = insert;
      if (await deps.apps.findInTeam(teamId, appId)) {
        // A crash between the app document and its list bump leaves lists that never saw it.
        await deps.appList.changed(teamId);
        await deps.inserts.close(appId);
        return;
      }
      await deps.versions.deleteByApps([appId]);
      await deps.perms.deleteAllFor(teamId, [appId]);
      if ((await deps.inserts.close(appId)) && reserved > 0) await deps.teamLimits.releaseApps(teamId, reserved);
    },

    /**
     * Deletes an app and its whole subtree with every dependent record. The apps that counted
     * toward the plan limit are recorded in `room` as they go (given back when it settles, after
     * a failure midway too); without one, their room is given back at once.
     */
    async deleteTree(teamId: string, appId: string, room?: AppRoom): Promise<void> {
      if (!room) return core.withAppRoom(teamId, 0, (own) => core.deleteTree(teamId, appId, own));
      // Under the tree lock nothing can be moved or created into the subtree while it goes.
      await deps.perms.tree.withTeamLock(teamId, (lock) => deleteSubtree(lock, teamId, appId, room));
    },

    /**
     * Call after writing something that belongs to an app (a share link, an app key, an input
     * guide, a version, a chat turn), authorised on the app before: true while the app stands.
     * Once it is gone (deleted since the caller's check), everything the app left is removed,
     * the caller's write included, and the answer is false. With the delete's second pass this
     * leaves no dependent behind: a write checked before the app went is removed by that pass
     * (which runs once no process can still see the app), one checked after by its writer.
     */
    async afterDependentWrite(teamId: string, appId: string): Promise<boolean> {
      if (await deps.appDocs.findInTeam(teamId, appId)) return true;
      // Removing is for good: the database confirms what the cache says first.
      if (await deps.apps.findInTeam(teamId, appId)) return true;
      await removeDependents(teamId, [appId]);
      return false;
    },

    /** afterDependentWrite, throwing appUnExist (404) when the app is gone. */
    async confirmDependentWrite(teamId: string, appId: string): Promise<void> {
      if (!(await core.afterDependentWrite(teamId, appId))) throw Errors.appUnExist(`App ${appId} not found`);
    },

    countsTowardLimit: (type: AppType) => CHAT_APP_TYPES.includes(type),

    /**
     * Runs `run` alone among the changes of one app that write what they computed from reading it
     * (publish, revert, an HTTP plugin's reconciliation), on every process, with the app as judged
     * and read on the database under the lock. Callers judge the caller in memory first
     * (`view`), so that one without the right never waits for the lock. The team tree lock may be
     * taken inside, never around it.
     */
    async withAppLock<T>(auth: AuthContext, appId: string, required: Exclude<RequiredPermission, 'read'>, run: (app: App, lock: LockHold) => Promise<T>): Promise<T> {
      return deps.locks.withLock(`app_changes:${appId}`, async (lock) => run((await core.authorizeWrite(auth, appId, required)).app, lock), APP_BUSY);
    },
  };

  /** Gives plan room back; one that fails only over-counts (the counter is recounted from the apps when quiet). */
  async function releaseRoom(teamId: string, count: number): Promise<void> {
    await deps.teamLimits.releaseApps(teamId, count).catch((error: unknown) => {
      deps.log.warn(`team ${teamId}: giving back room for ${count} app(s) failed, counted until the next recount: ${describeError(error)}`);
    });
  }

  /**
   * Takes back an insert that failed here. One whose app document never landed is settled
   * (settleInsert: rows and version removed, its room given back). One whose document landed
   * before a later step failed is deleted as a delete would (deleteTree: its subtree, its
   * dependents, what it counted given back); its record goes first, without giving its room back,
   * so that a stop between the two leaves the app whole and counted, as after a crash.
   * `room`: the caller's, when the app counts toward the plan limit in it.
   */
  async function takeBackInsert(insert: { appId: string; teamId: string; reserved: number }, room: AppRoom | undefined): Promise<void> {
    const { appId, teamId } = insert;
    if (!(await deps.apps.findInTeam(teamId, appId))) {
      await core.settleInsert(insert);
      return;
    }
    await deps.inserts.close(appId);
    // Counted until its delete gives it back (in the caller's room, or at once without one).
    room?.counted(1);
    await core.deleteTree(teamId, appId, room);
  }

  /** The writes of an insert, the app document last; under the tree lock when it goes into a folder. */
  async function writeApp(auth: AuthContext, appId: string, input: NewApp): Promise<void> {
    const teamId = auth.teamId;
    const folder = isFolderType(input.type);
    const modules = folder ? [] : (input.modules ?? []);
    const edges = folder ? [] : (input.edges ?? []);
    const write = async (lock?: LockHold) => {
      // Read under the lock: a folder starts with its parent's permissions as they stand now.
      const initial = await deps.perms.initialFor(teamId, folder, input.parentId, input.tmbId ?? auth.tmbId);
      const doc: AppDoc = {
        _id: appId,
        parentId: input.parentId || null,
        teamId,
        tmbId: input.tmbId ?? auth.tmbId,
        name: input.name,
        type: input.type,
        version: 'v2',
        avatar: input.avatar || (input.type === 'folder' ? FOLDER_AVATAR : DEFAULT_APP_AVATAR),
        intro: input.intro ?? '',
        updateTime: now(),
        teamTags: [],
        modulesJson: encodeWorkflow(modules),
        edgesJson: encodeWorkflow(edges),
        pluginData: { ...input.pluginData, nodeVersion: input.pluginData?.nodeVersion ?? '481' },
        defaultPermission: initial.defaultPermission,
        inheritPermission: true,
      };
      if (input.chatConfig !== undefined) doc.chatConfigJson = JSON.stringify(input.chatConfig);
      if (initial.collaborators.length > 0) await deps.perms.writeCollaborators(teamId, appId, initial.collaborators);
      if (!folder) await deps.versions.insert({ appId, nodes: modules, edges, chatConfig: input.chatConfig, versionName: input.name });
      // The app document is what puts the app into its folder (the rows and version before it are
      // unseen, and a failure removes them): not once another process may have moved or deleted the folder,
      // nor once the insert's own lease ran out (a sweep may have settled it: version and rows gone, room back).
      lock?.assertHeld();
      if (!(await deps.inserts.renew(appId))) throw new LockLostError(`app_inserts:${appId}`, 'the insert lease ran out');
      await deps.apps.insert(doc);
    };
    if (!input.parentId) return write();
    // Under the tree lock the parent cannot be deleted or moved between the check and the writes.
    const parentId = input.parentId;
    await deps.perms.tree.withTeamLock(teamId, async (lock) => {
      if (!(await deps.apps.findInTeam(teamId, parentId))) throw Errors.appUnExist(`App ${parentId} not found`);
      await write(lock);
    });
  }

  /**
   * Dependents first, then the apps deepest level first, each write only while the tree lock is
   * still held: a holder that lost it stops before its next write, leaving the top of the subtree
   * in place (as a crash would) for a retry. Each level's room is recorded once it is gone: none
   * given back twice (a retry no longer sees it), none lost. Then the dependents of the apps that
   * went, a second time (see afterDependentWrite).
   */
  async function deleteSubtree(lock: LockHold, teamId: string, appId: string, room: AppRoom): Promise<void> {
    const tree = await deps.apps.teamTree(teamId);
    const below = new Set(allDescendants(appId, tree));
    const parentOf = new Map(tree.map((n) => [n.id, n.parentId]));
    const depth = (id: string) => {
      let d = 0;
      for (let p = parentOf.get(id); p && p !== appId && d < tree.length; p = parentOf.get(p)) d++;
      return d;
    };
    const levels: string[][] = [];
    for (const id of below) {
      const d = depth(id);
      levels[d] = [...(levels[d] ?? []), id];
    }
    const deepestFirst = [...levels.filter(Boolean).reverse(), [appId]];
    await removeDependents(teamId, deepestFirst.flat(), () => lock.assertHeld());
    const typeOf = new Map(tree.map((n) => [n.id, n.type]));
    const counted = (ids: string[]) => ids.filter((id) => core.countsTowardLimit(typeOf.get(id) as AppType)).length;
    const gone: string[] = [];
    const deleted = (level: string[]) => {
      gone.push(...level);
      room.counted(-counted(level));
    };
    // A writer that authorised on an app before it went may have written a dependent after the
    // pass above and checked the app before it went (afterDependentWrite): a second pass over
    // the apps that went removes those, after a stop midway too. It needs no lock: nothing of a
    // deleted app is kept.
    await withFollowUp(
      () => deps.apps.deleteLevels(teamId, deepestFirst, { before: () => lock.assertHeld(), deleted }),
      () => removeDependents(teamId, gone),
    );
  }

  /** What other modules and this one keep for the apps: each step only while `stillAllowed` does not throw. */
  async function removeDependents(teamId: string, appIds: string[], stillAllowed: () => void = () => undefined): Promise<void> {
    if (appIds.length === 0) return;
    const steps = [
      ...deps.onDeleted.map((listener) => () => listener(teamId, appIds)),
      () => deps.versions.deleteByApps(appIds),
      () => deps.perms.deleteAllFor(teamId, appIds),
    ];
    for (const remove of steps) {
      stillAllowed();
      await remove();
    }
  }
  return core;
}

export type AppsCore = ReturnType<typeof createAppsCore>;
