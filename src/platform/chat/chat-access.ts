/**
 * Chat permission rules: which app a caller chats with and
 * whether an existing chat is theirs.
 */
import { type GraphResources, graphResources } from '../../domain/workflow/graph-resources.js';
import { Errors, isAppError } from '../../infra/errors.js';
import { requireHexId } from '../../infra/mongo.js';
import type { AuthContext } from '../auth/types.js';
import { hasTeamPermission } from '../permissions/resource-permission.service.js';
import type { AppDoc, AppSource } from './app-source.js';
import type { ChatDoc, ChatRepo } from './chat.repo.js';


/** An API key bound to one app acts only on that app (403 unAuthApp otherwise). */
export function assertKeyMayUseApp(auth: AuthContext, appId: string | undefined): void {
  if (auth.authType === 'apikey' && auth.appId && appId && auth.appId !== appId) throw Errors.unAuthApp(`This API key is bound to app ${auth.appId}, not to app ${appId}`);
}

/**
 * Whether an app manager's rights reach other members' chats for this caller: for a session or
 * the root key (the logs page), never for share and team callers or API keys.
 */
export const managerRightsReachChats = (auth: AuthContext): boolean => auth.authType === 'token' || auth.authType === 'root';

/** Read checks of the resources a caller-supplied graph uses (see graph-resources.ts). */
export interface CallerGuard {
  /** The ids the search may read, in the order given: throws at the first refused. */
  datasets(ids: readonly string[]): Promise<string[]>;
  app(id: string): Promise<void>;
}

export interface DatasetPermissions {
  authorize(auth: AuthContext, datasetId: string, required: 'read'): Promise<unknown>;
  /** Of `datasetIds`, those of the team (from its read model). */
  findInTeam(teamId: string, datasetIds: readonly string[]): Promise<{ _id: string }[]>;
}

export function createChatAccess(deps: {
  repo: ChatRepo;
  apps: AppSource;
  datasets: DatasetPermissions;
  memberContext: (tmbId: string) => Promise<Omit<AuthContext, 'authType'> | null>;
}) {
  /** The app a chat request runs, by credential kind. */
  async function appForChat(auth: AuthContext, bodyAppId: string | undefined): Promise<AppDoc> {
    if (auth.authType === 'outLink') return deps.apps.findInTeam(auth.teamId, auth.appId!);
    if (auth.authType === 'teamDomain') {
      if (!bodyAppId) throw Errors.missingParams("Missing field 'appId': team-space chats need the app id");
      return deps.apps.findInTeam(auth.teamId, bodyAppId);
    }
    if (auth.authType === 'apikey') {
      // A bound key always runs its own app, whatever appId the body names (as the reference).
      if (auth.appId) return deps.apps.findInTeam(auth.teamId, auth.appId);
      const requested = bodyAppId ?? auth.legacyAppId;
      if (!requested) throw Errors.missingParams('Key is error. You need to use the app key rather than the account key (or send appId).');
      return (await deps.apps.authorize(auth, requested, 'read')).app;
    }
    if (!bodyAppId) throw Errors.missingParams("Missing field 'appId' (appId is empty)");
    return (await deps.apps.authorize(auth, bodyAppId, 'read')).app;
  }

  /** Whether an existing chat may be used by this caller (undefined chat: allowed). */
  function mayUseChat(auth: AuthContext, chat: ChatDoc | null, required: 'read' | 'write'): boolean {
    if (!chat) return true;
    if (auth.authType === 'outLink') return chat.shareId === auth.outLink?.shareId && chat.outLinkUid === auth.outLink?.outLinkUid;
    // A team-space visitor's chats only: a share visitor or an API end user (customUid) may carry the same uid.
    if (auth.authType === 'teamDomain') return chat.teamId === auth.teamId && chat.source === 'team' && !chat.shareId && chat.outLinkUid === auth.outLink?.outLinkUid;
    if (chat.teamId !== auth.teamId) return false;
    if (hasTeamPermission(auth, 'owner') || chat.tmbId === auth.tmbId) return true;
    return required === 'write' && hasTeamPermission(auth, 'manage');
  }

  /** authChatCrud: the app must be the caller's; an existing chat must be theirs. */
  async function authChatCrud(auth: AuthContext, appId: string, chatId: string | undefined, required: 'read' | 'write'): Promise<ChatDoc | null> {
    requireHexId(appId, 'appId');
    if (auth.authType === 'outLink' && auth.appId !== appId) throw Errors.unAuthChat('This share link belongs to another app');
    assertKeyMayUseApp(auth, appId);
    if (auth.authType !== 'outLink') await deps.apps.findInTeam(auth.teamId, appId);
    if (!chatId) return null;
    return findOwnChat(auth, appId, chatId, {}, required);
  }

  /** The chat of that id (null when there is none yet), if it is the caller's; else 403 `unAuthChat`. */
  async function findOwnChat(auth: AuthContext, appId: string, chatId: string, within: { shareId?: string; teamId?: string } = {}, required: 'read' | 'write' = 'read'): Promise<ChatDoc | null> {
    const chat = await deps.repo.findChat(appId, chatId, within);
    if (!mayUseChat(auth, chat, required)) throw Errors.unAuthChat(`Chat ${chatId} belongs to someone else`);
    return chat;
  }

  /**
   * authChatCrud, else manage permission on the app: an app manager reads and annotates any
   * chat of the app from the logs page (as the reference). Only "someone else's chat" falls
   * back, and only for a session or the root key (the reference asks a user token): share and
   * team callers and API keys never do.
   */
  async function authChatOrAppManager(auth: AuthContext, appId: string, chatId: string): Promise<ChatDoc | null> {
    try {
      return await authChatCrud(auth, appId, chatId, 'read');
    } catch (error) {
      if (!isAppError(error) || error.statusText !== 'unAuthChat' || !managerRightsReachChats(auth)) throw error;
      await deps.apps.authorize(auth, appId, 'manage');
      return deps.repo.findChat(appId, chatId);
    }
  }

  /** What a caller can read: a graph the caller sent (chatTest, debug) reads only that; also the supplier side of storedGraphGuard. */
  function callerGuard(auth: AuthContext): CallerGuard {
    return {
      async datasets(ids) {
        for (const id of new Set(ids)) await deps.datasets.authorize(auth, id, 'read');
        return [...ids];
      },
      async app(id) {
        await deps.apps.authorize(auth, id, 'read', 'pluginId');
      },
    };
  }

  /**
   * Who answers for the ids a caller supplies to a stored graph (variables): a member, with their
   * own rights. A share link or a team space acts through a stand-in member (the link's creator,
   * the team owner), whose rights are not the visitor's, and an editor could wire a variable to
   * reach them: through those, a stored graph searches only what it names itself.
   */
  function supplierGuard(auth: AuthContext): CallerGuard {
    if (auth.authType !== 'outLink' && auth.authType !== 'teamDomain') return callerGuard(auth);
    const refuse = (what: string) => {
      throw Errors.unAuthDataset(`Through a share link or team space this app reads only the ${what} its workflow names itself, not one given at run time`);
    };
    return {
      async datasets(ids) {
        if (ids.length > 0) refuse('datasets');
        return [];
      },
      async app() {
        refuse('apps');
      },
    };
  }

  /** Checks every dataset and app the graph names before anything runs (403 otherwise). */
  async function assertCallerGraph(auth: AuthContext, nodes: readonly unknown[]): Promise<CallerGuard> {
    const guard = callerGuard(auth);
    await assertReadable(guard, graphResources(nodes));
    return guard;
  }

  /** Every dataset and app of `resources` passes `guard` (403 at the first that does not). */
  async function assertReadable(guard: CallerGuard, resources: GraphResources): Promise<void> {
    await guard.datasets(resources.datasetIds);
    for (const id of resources.appIds) await guard.app(id);
  }

  /**
   * A graph being saved (create, update, version save or publish): the datasets and apps it names
   * that the app's current graph did not must be readable by the one saving it, so write on an
   * app never becomes read on a dataset or an app. What the graph already named was checked when
   * it was added (and is read with the owner's rights: see storedGraphGuard).
   */
  async function assertSavedGraph(auth: AuthContext, nodes: readonly unknown[], previous: readonly unknown[]): Promise<void> {
    const before = graphResources(previous);
    const after = graphResources(nodes);
    await assertReadable(callerGuard(auth), {
      datasetIds: after.datasetIds.filter((id) => !before.datasetIds.includes(id)),
      appIds: after.appIds.filter((id) => !before.appIds.includes(id)),
    });
  }

  /**
   * What a stored graph reads when it runs. The datasets and apps it names itself were chosen by
   * its owner or an editor (checked when saved): they are read with the app owner's rights. Any
   * other id reaches the run from outside (a variable the caller sets, a parent graph's input):
   * it needs the owner's rights and also those of `supplier` (the caller's guard, or the parent
   * run's), so nobody reads through an app what they could not read themselves. Copies are
   * covered too: the copier owns the copy. An owner no longer in the team reads nothing.
   * A dataset the graph names itself that is gone from the team is left out of the search, as
   * the reference searches the graph's ids within the team: deleting one dataset does not break
   * every app naming it. Ids from outside keep their errors (404 for a missing one).
   */
  function storedGraphGuard(app: { teamId: string; tmbId: string }, nodes: readonly unknown[], supplier: CallerGuard): CallerGuard {
    let own: GraphResources | undefined;
    const ownIds = () => (own ??= graphResources(nodes));
    let owner: Promise<CallerGuard> | undefined;
    const ownerGuard = () => {
      owner ??= deps.memberContext(app.tmbId).then((member) => {
        if (!member) throw Errors.unAuthApp("This app's owner is no longer a member of its team: it reads no dataset or app");
        return callerGuard(Object.assign({}, member, { authType: 'token' as const }));
      });
      return owner;
    };
    return {
      async datasets(ids) {
        const isOwn = (id: string) => ownIds().datasetIds.includes(id);
        const own = ids.filter(isOwn);
        const standing = new Set(own.length > 0 ? (await deps.datasets.findInTeam(app.teamId, own)).map((doc) => doc._id) : []);
        const checked = ids.filter((id) => !isOwn(id) || standing.has(id));
        if (checked.length === 0) return [];
        await (await ownerGuard()).datasets(checked);
        const supplied = checked.filter((id) => !isOwn(id));
        const allowed = new Set([...standing, ...(supplied.length > 0 ? await supplier.datasets(supplied) : [])]);
        return checked.filter((id) => allowed.has(id));
      },
      async app(id) {
        await (await ownerGuard()).app(id);
        if (!ownIds().appIds.includes(id)) await supplier.app(id);
      },
    };
  }

  return { appForChat, mayUseChat, authChatCrud, findOwnChat, authChatOrAppManager, assertCallerGraph, assertSavedGraph, supplierGuard, storedGraphGuard };
}

export type ChatAccess = ReturnType<typeof createChatAccess>;
