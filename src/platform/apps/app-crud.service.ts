import type { z } from 'zod';
import { folderBreadcrumb } from '../../domain/folder-breadcrumb.js';
import type { SerializedPermission } from '../../domain/permission.js';
import { MemoisedAnswer } from '../../infra/answer-memo.js';
import { Errors } from '../../infra/errors.js';
import type { AuthContext } from '../auth/types.js';
import { assertPermissionUpdate, callerOf } from '../permissions/resource-permission.service.js';
import { type ListedApp, selectApps, type TeamAppList } from './app-list.read-model.js';
import type { App, AppDoc } from './apps.repo.js';
import { CHAT_APP_TYPES, type createAppInput, type createFolderInput, type listAppsInput, type updateAppInput } from './apps.schema.js';
import { type AppsCore, type AppsDeps, isFolderType, type SavedGraphCheck } from './apps.service.js';
import { simpleWorkflowOf } from './simple-form.js';
import { clampDatasetSearchLimits } from '../../domain/workflow/quote-limits.js';
import { textHead } from '../../domain/text-cut.js';

const RECENT_LIMIT = 15;
const SEARCH_LIMIT = 20;
const LIST_LIMIT = 1000;

/**
 * An HTTP plugin's schema and custom headers usually carry credentials of the API it calls:
 * like the workflow itself, they are shown only to members who may edit the app.
 */
function visiblePluginData(pluginData: App['pluginData'], canWrite: boolean): App['pluginData'] {
  if (canWrite || !pluginData) return pluginData;
  const { apiSchemaStr: _schema, customHeaders: _headers, ...rest } = pluginData;
  return rest;
}

/** The detail shape: the stored app plus the caller's permission, ids as text. */
export function presentApp(app: App, permission: unknown, defaultPermission: number, canWrite: boolean) {
  return {
    _id: app._id,
    parentId: app.parentId || null,
    teamId: app.teamId,
    tmbId: app.tmbId,
    type: app.type,
    version: app.version,
    name: app.name,
    avatar: app.avatar,
    intro: app.intro,
    updateTime: app.updateTime,
    modules: canWrite ? app.modules : [],
    edges: canWrite ? app.edges : [],
    pluginData: visiblePluginData(app.pluginData, canWrite),
    chatConfig: app.chatConfig ?? {},
    scheduledTriggerConfig: app.scheduledTriggerConfig ?? null,
    scheduledTriggerNextTime: app.scheduledTriggerNextTime ?? null,
    teamTags: app.teamTags ?? [],
    inheritPermission: app.inheritPermission !== false,
    defaultPermission,
    permission,
  };
}

/** One app of a `core/app/list` answer (fields in the answer's order, apps.schema.ts appListResponse). */
function listItem(app: ListedApp, permission: SerializedPermission, defaultPermission: number) {
  const { doc } = app;
  return {
    _id: app.id,
    parentId: app.parentId,
    tmbId: app.tmbId,
    avatar: doc.avatar,
    type: doc.type,
    name: doc.name,
    intro: doc.intro,
    updateTime: doc.updateTime,
    permission,
    defaultPermission,
    pluginData: visiblePluginData(doc.pluginData, permission.hasWritePer),
    inheritPermission: doc.inheritPermission !== false,
  };
}

export function createAppCrud(core: AppsCore, deps: AppsDeps, checkSavedGraph: SavedGraphCheck) {
  /** The apps of a team version the caller may read, as `core/app/list` answers them. */
  async function listFrom(team: TeamAppList, auth: AuthContext, input: z.output<typeof listAppsInput>) {
    const own = team.rows.get(auth.tmbId);
    const rowOf = (id: string) => own?.get(id);
    if (input.parentId) await core.authorizeIn(team, auth, input.parentId, 'read', 'parentId');
    else core.assertTeam(auth, 'read');
    const types = input.type === undefined ? undefined : Array.isArray(input.type) ? input.type : [input.type];
    const searchKey = input.searchKey?.trim() || undefined;
    const selected = selectApps(team, {
      // A search covers the whole team, recent chats too; otherwise parentId absent = whole team.
      parentId: input.getRecentlyChat || searchKey ? undefined : input.parentId,
      types: input.getRecentlyChat ? CHAT_APP_TYPES : types,
      searchKey,
      limit: searchKey ? SEARCH_LIMIT : LIST_LIMIT,
    });
    const caller = callerOf(auth);
    const resourceOf = (id: string) => team.byId.get(id)?.resource;
    const out: ReturnType<typeof listItem>[] = [];
    // Answered apps whose editors are shown the HTTP plugin schema the list was loaded without.
    const schemaShown = new Map<string, ReturnType<typeof listItem>>();
    for (const app of selected) {
      const { permission, defaultPermission } = deps.perms.resolveLoaded(caller, app.resource, resourceOf, rowOf);
      if (!permission.hasReadPer) continue;
      const item = listItem(app, permission, defaultPermission);
      out.push(item);
      if (permission.hasWritePer && app.hasPluginSchema) schemaShown.set(app.id, item);
      if (input.getRecentlyChat && out.length >= RECENT_LIMIT) break;
    }
    if (schemaShown.size > 0) {
      // Read now, so at least as new as the list: a later write of them moves the list's stamp.
      const stored = await deps.apps.pluginDataOf(auth.teamId, [...schemaShown.keys()]);
      for (const [id, item] of schemaShown) item.pluginData = stored.get(id) ?? item.pluginData;
    }
    return out;
  }

  return {
    async create(auth: AuthContext, input: z.output<typeof createAppInput>): Promise<string> {
      const { aiSettings: _ai, dataset: _dataset, selectedTools: _tools, ...fields } = input;
      const built = simpleWorkflowOf(input.type, input);
      if (!input.modules && !built) throw Errors.missingParams("Invalid field 'modules': must be an array of node objects (or send a simple app's form)");
      await core.assertMayCreateIn(auth, input.parentId);
      const modules = built?.nodes ?? input.modules ?? [];
      await checkSavedGraph(auth, modules, []);
      return core.insertApp(auth, { ...fields, modules, edges: built?.edges ?? input.edges, parentId: input.parentId ?? null });
    },

    async createFolder(auth: AuthContext, input: z.output<typeof createFolderInput>): Promise<null> {
      await core.assertMayCreateIn(auth, input.parentId);
      await core.insertApp(auth, { parentId: input.parentId ?? null, name: input.name, intro: input.intro, type: 'folder' });
      return null;
    },

    async folderPath(auth: AuthContext, parentId: string | null | undefined) {
      if (!parentId) return [];
      // Judged and walked on the team's list read model (names and parents of every app).
      const team = await deps.appList.team(auth.teamId);
      await core.authorizeIn(team, auth, parentId, 'read', 'parentId');
      const findInTeam = async (id: string) => {
        const found = team.byId.get(id)?.doc;
        return found ? { _id: id, name: found.name, parentId: found.parentId || null } : null;
      };
      const start = await findInTeam(parentId);
      return start ? folderBreadcrumb(start, findInTeam) : [];
    },

    /**
     * Served from the team's read model: one stamp read when nothing changed since the last list.
     * The answer depends only on that version, the caller's identity and rights and the query, so
     * it is serialised once per such key and version (a refusal is never memoised).
     */
    async list(auth: AuthContext, input: z.output<typeof listAppsInput>) {
      const team = await deps.appList.team(auth.teamId);
      // An object, not an array: an absent parentId (whole team) and null (the root) must differ.
      const { authType, tmbId, role, teamPermission, isRoot } = auth;
      const key = JSON.stringify({ authType, tmbId, role, teamPermission, isRoot, query: input });
      return new MemoisedAnswer(team.answers, key, () => listFrom(team, auth, input));
    },

    async detail(auth: AuthContext, appId: string) {
      const { app, permission, defaultPermission } = await core.view(auth, appId, 'read');
      return presentApp(app, permission, defaultPermission, permission.hasWritePer);
    },

    /** Fields, default permission and move (checked in that order before anything is written). */
    async update(auth: AuthContext, input: z.output<typeof updateAppInput>): Promise<null> {
      const wantsPermission = input.defaultPermission !== undefined;
      const { doc } = await core.authorize(auth, input.appId, wantsPermission ? 'manage' : 'write');
      if (input.type && isFolderType(input.type) !== isFolderType(doc.type)) {
        throw Errors.invalidAppType(`Invalid field 'type': an app of type ${doc.type} cannot become ${input.type}`);
      }
      assertPermissionUpdate(doc, input);
      // The new fields are worked out before anything is written: a failure leaves the app as it was.
      const set: Partial<AppDoc> = {};
      if (input.name) set.name = input.name;
      if (input.type) set.type = input.type;
      if (input.avatar) set.avatar = input.avatar;
      if (input.intro !== undefined) set.intro = input.intro;
      if (input.teamTags) set.teamTags = input.teamTags;
      const built = input.nodes ? undefined : simpleWorkflowOf(input.type ?? doc.type, input);
      if (built) set.edgesJson = JSON.stringify(built.edges);
      const nodes = input.nodes ?? built?.nodes;
      if (nodes) {
        await checkSavedGraph(auth, nodes, (await deps.appDocs.findInTeam(auth.teamId, input.appId))?.modules ?? []);
        set.modulesJson = JSON.stringify(clampDatasetSearchLimits(nodes, deps.quoteMaxTokenOf));
      }
      if (input.edges) set.edgesJson = JSON.stringify(input.edges);
      if (input.chatConfig) set.chatConfigJson = JSON.stringify(input.chatConfig);
      const currentParent = doc.parentId || null;
      if (input.parentId !== undefined && input.parentId !== currentParent) await deps.perms.move(auth, doc, input.parentId);
      if (wantsPermission) {
        const fresh = (await deps.perms.tree.findById(input.appId)) ?? doc;
        await deps.perms.changeDefaultPermission(auth, fresh, input.defaultPermission as number);
      }
      await deps.apps.update(auth.teamId, input.appId, set);
      return null;
    },

    async remove(auth: AuthContext, appId: string): Promise<null> {
      await core.authorize(auth, appId, 'owner');
      await core.deleteTree(auth.teamId, appId);
      return null;
    },

    async copy(auth: AuthContext, appId: string): Promise<{ appId: string }> {
      const { app: source } = await core.authorizeWrite(auth, appId, 'write');
      const parentId = source.parentId || null;
      await core.assertMayCreateIn(auth, parentId);
      const { apiSchemaStr, customHeaders, pluginUniId } = source.pluginData ?? {};
      const id = await core.insertApp(auth, {
        parentId,
        name: textHead(`${source.name} Copy`, 200),
        intro: source.intro,
        avatar: source.avatar,
        type: source.type,
        modules: source.modules,
        edges: source.edges,
        chatConfig: source.chatConfig,
        pluginData: { apiSchemaStr, customHeaders, pluginUniId },
      });
      return { appId: id };
    },

    async transitionWorkflow(auth: AuthContext, appId: string, createNew: boolean): Promise<{ id: string } | Record<string, never>> {
      const { app } = await core.authorizeWrite(auth, appId, 'owner');
      if (app.type !== 'simple') throw Errors.invalidAppType(`App ${appId} is of type ${app.type}; only simple apps can become workflows`);
      if (!createNew) {
        await deps.apps.update(auth.teamId, appId, { type: 'advanced' });
        return {};
      }
      // A new app beside the source: asked as a copy is (owning the source is not enough).
      await core.assertMayCreateIn(auth, app.parentId || null);
      const id = await core.insertApp(auth, {
        parentId: app.parentId || null,
        name: textHead(`${app.name} Copy`, 200),
        avatar: app.avatar,
        type: 'advanced',
        modules: app.modules,
        edges: app.edges,
      });
      return { id };
    },

    async resumeInheritPermission(auth: AuthContext, appId: string): Promise<null> {
      const { doc } = await core.authorize(auth, appId, 'manage');
      await deps.perms.resumeInheritance(auth, doc);
      return null;
    },
  };
}

