/** Chat windows and items: init, histories, rename/pin, delete, node responses, feedback. */
import { resolveChatConfig } from '../../domain/workflow/chat-config.js';
import type { ChatValue, StoreNode } from '../../domain/workflow/types.js';
import { Errors } from '../../infra/errors.js';
import { requireHexId } from '../../infra/mongo.js';
import type { AuthContext } from '../auth/types.js';
import type { IdentityServices } from '../identity/identity.plugin.js';
import type { AppDoc } from './app-source.js';
import type { ChatDoc, ChatItemDoc, ChatQuery } from './chat.repo.js';
import { assertKeyMayUseApp, managerRightsReachChats } from './chat-access.js';
import { callerFromAuth } from './chat-caller.js';
import type { ChatModule } from './chat-module.js';
import { DAY_MS } from './chat-time.js';
import { type ResponseView, responseViewOf, shownResponses } from './messages.js';

type Responses = Record<string, unknown>[];

/** A file part whose link is a string (stored items are read as they are: imported chats may hold anything). */
const isFileValue = (value: unknown): value is Extract<ChatValue, { type: 'file' }> =>
  (value as ChatValue | null)?.type === 'file' && typeof (value as { file?: { url?: unknown } }).file?.url === 'string';

/** The "preview" shape of AI items: counts and totals instead of the raw node responses. */
export function previewItem(item: Record<string, unknown>): Record<string, unknown> {
  const { responseData, ...rest } = item;
  // Without node responses (a share link that hides them) there is nothing to count: the item as it is, as the reference.
  if (item.obj !== 'AI' || !Array.isArray(responseData)) return rest;
  const list = responseData as Responses;
  // The top-level responses and their direct tool and plugin children, as the reference counts them.
  const all = list.flatMap((r) => [r, ...((r.pluginDetail as Responses) ?? []), ...((r.toolDetail as Responses) ?? [])]);
  const firstLlm = all.find((r) => r.moduleType === 'chatNode' || r.moduleType === 'tools');
  return {
    ...rest,
    llmModuleAccount: all.filter((r) => r.moduleType === 'chatNode' || r.moduleType === 'tools').length,
    totalQuoteList: all.filter((r) => r.moduleType === 'datasetSearchNode').flatMap((r) => (r.quoteList as unknown[]) ?? []),
    // A parent's running time already holds its children's: the top level only.
    totalRunningTime: Math.round(list.reduce((sum, r) => sum + (Number(r.runningTime) || 0), 0) * 100) / 100,
    historyPreviewLength: Array.isArray(firstLlm?.historyPreview) ? (firstLlm.historyPreview as unknown[]).length : undefined,
  };
}

function chatConfigFor(graph: { nodes: StoreNode[]; chatConfig: Record<string, unknown> }, chat: ChatDoc | null) {
  const { scheduledTriggerConfig: _hidden, ...config } = resolveChatConfig(graph.nodes, graph.chatConfig, { variableList: chat?.variableList, welcomeText: chat?.welcomeText });
  return config;
}

/** A chat window's opening request, by who opens it: a member or API key, a share-page visitor, a team-space visitor. */
export type InitRequest =
  | { kind: 'owner'; appId?: string; chatId?: string; loadCustomFeedbacks?: boolean }
  | { kind: 'share'; shareId: string; chatId?: string }
  | { kind: 'team'; appId: string; chatId?: string };

export function createHistoryService(chat: ChatModule, identity: Pick<IdentityServices, 'memberProfiles' | 'findTeam'>) {
  const { repo } = chat;

  /** The chat a window opens (null: none named, or none yet); someone else's is refused unless `managerMayRead`. */
  async function chatToOpen(auth: AuthContext, appId: string, chatId: string | undefined, within: { shareId?: string; teamId?: string }, managerMayRead = false) {
    if (!chatId) return null;
    if (managerMayRead) return repo.findChat(appId, chatId, within);
    return chat.findOwnChat(auth, appId, chatId, within);
  }

  /** A chat item's id: 4.8.12 names it `dataId`, 4.8.10 `chatItemId`. */
  function itemIdOf(input: { chatItemId?: string; dataId?: string }): string {
    const dataId = input.chatItemId ?? input.dataId;
    if (!dataId) throw Errors.missingParams("Missing field 'chatItemId' (chatItemId is required)");
    return dataId;
  }

  /**
   * The items with their own chat files' read links renewed when (nearly) expired: a chat item
   * names its question's files by 7-day links (inline images included), which the window would
   * otherwise show broken a week on. No read unless a link is due.
   */
  async function withRenewedFileLinks(items: ChatItemDoc[], owner: { teamId: string; appId: string; chatId: string }): Promise<ChatItemDoc[]> {
    const fileValues = (item: ChatItemDoc) => (Array.isArray(item.value) ? item.value : []).filter(isFileValue);
    const urls = items.flatMap((item) => fileValues(item).map((value) => value.file.url));
    if (urls.length === 0) return items;
    const renewed = await chat.fileLinks.renewLinks(urls, owner);
    if (renewed.size === 0) return items;
    return items.map((item) =>
      fileValues(item).some((value) => renewed.has(value.file.url))
        ? { ...item, value: item.value.map((value) => (isFileValue(value) && renewed.has(value.file.url) ? { ...value, file: { ...value.file, url: renewed.get(value.file.url)! } } : value)) }
        : item,
    );
  }

  async function initData(input: {
    app: AppDoc;
    chat: ChatDoc | null;
    chatId?: string;
    userAvatar?: string;
    loadCustomFeedbacks?: boolean;
    fields: 'owner' | 'share' | 'shareDetail' | 'team';
  }) {
    const { app } = input;
    const appId = app._id;
    const graph = await chat.apps.runGraph(app);
    const isPlugin = app.type === 'plugin';
    const items = input.chatId && input.chat ? await withRenewedFileLinks(await repo.lastItems(appId, input.chatId, 30), { teamId: app.teamId, appId, chatId: input.chatId }) : [];
    const history = items.map((item: ChatItemDoc) => {
      const out: Record<string, unknown> = { dataId: item.dataId, obj: item.obj, value: item.value, userGoodFeedback: item.userGoodFeedback, userBadFeedback: item.userBadFeedback };
      if (input.fields !== 'share') {
        out.adminFeedback = item.adminFeedback;
        // A plugin's filtered too (the reference shows those whole): its nodes' headers and
        // answers are the app's, and completions and getResData filter them for the same visitor.
        out.responseData = shownResponses(item.responseData ?? [], { publicOnly: input.fields !== 'owner', detail: true });
      }
      if (input.loadCustomFeedbacks) out.customFeedbacks = item.customFeedbacks;
      return isPlugin ? out : previewItem(out);
    });
    const modelNames = new Set<string>();
    for (const node of graph.nodes) {
      const model = node.inputs.find((i) => i.key === 'model')?.value;
      // Models the configuration does not know are left out, as the reference lists them.
      const name = typeof model === 'string' && model ? chat.models.llmNameOf(model) : undefined;
      if (name) modelNames.add(name);
    }
    return {
      chatId: input.chatId,
      appId,
      title: input.chat?.title,
      userAvatar: input.userAvatar,
      variables: input.chat?.variables ?? {},
      history,
      app: {
        chatConfig: chatConfigFor(graph, input.chat),
        chatModels: [...modelNames],
        name: app.name,
        avatar: app.avatar ?? '',
        intro: app.intro ?? '',
        type: app.type,
        pluginInputs: graph.nodes.find((n) => n.flowNodeType === 'pluginInput')?.inputs ?? [],
      },
    };
  }

  /** What getResData shows this caller, as the completions answer showed it (messages.ts). */
  async function responseViewOfAuth(auth: AuthContext, appId: string): Promise<ResponseView> {
    if (auth.authType !== 'outLink') return responseViewOf(callerFromAuth(auth), false);
    const link = await chat.outLinks.linkOf(auth);
    const caller = callerFromAuth(auth, link.responseDetail);
    // The app is read only when the link hides details: a plugin app's are shown anyway.
    return responseViewOf(caller, !caller.responseDetail && (await chat.apps.findInTeam(auth.teamId, appId)).type === 'plugin');
  }

  /** getHistories / clearHistories match, by credential kind. */
  function historyFilter(auth: AuthContext, requestedAppId: string | undefined, forClear: boolean): { filter: ChatQuery; limit: number; appId: string } {
    // A key bound to an app only ever reaches that app's histories.
    assertKeyMayUseApp(auth, requestedAppId);
    const appId = (auth.authType === 'apikey' ? auth.appId : undefined) ?? requestedAppId;
    if (auth.authType === 'outLink') {
      const base = { shareId: auth.outLink!.shareId, outLinkUid: auth.outLink!.outLinkUid };
      return forClear ? { filter: base, limit: 0, appId: auth.appId! } : { filter: { ...base, source: 'share', updatedSince: new Date(chat.now() - 30 * DAY_MS) }, limit: 20, appId: auth.appId! };
    }
    if (!appId) throw Errors.missingParams("Missing field 'appId' (Params are error)");
    requireHexId(appId, 'appId');
    // Cleared as listed: the team space's own chats, not a share visitor's or an API end user's with the same uid.
    if (auth.authType === 'teamDomain') return { filter: { appId, teamId: auth.teamId, outLinkUid: auth.outLink!.outLinkUid, source: 'team' }, limit: 30, appId };
    return { filter: { appId, tmbId: auth.tmbId, source: auth.authType === 'apikey' ? 'api' : 'online' }, limit: 30, appId };
  }

  return {
    /** The chat window's data (app config, the chat's last items) for whoever opens it. */
    async initFor(auth: AuthContext, request: InitRequest) {
      if (request.kind === 'owner') {
        if (!request.appId) throw Errors.noAppYet();
        assertKeyMayUseApp(auth, request.appId);
        const { app, permission } = await chat.apps.authorize(auth, request.appId, 'read');
        const managerMayRead = permission.hasManagePer && managerRightsReachChats(auth);
        const existing = await chatToOpen(auth, request.appId, request.chatId, {}, managerMayRead);
        return initData({ app, chat: existing, chatId: request.chatId, loadCustomFeedbacks: request.loadCustomFeedbacks, fields: 'owner' });
      }
      if (request.kind === 'share') {
        const link = await chat.outLinks.linkOf(auth);
        const app = await chat.apps.findInTeam(auth.teamId, link.appId);
        const existing = await chatToOpen(auth, app._id, request.chatId, { shareId: request.shareId });
        const detail = link.responseDetail || app.type === 'plugin';
        // The visitor's messages show the link creator's avatar, as the reference's share page.
        const creator = (await identity.memberProfiles(link.teamId, [link.tmbId])).get(link.tmbId);
        return initData({ app, chat: existing, chatId: request.chatId, fields: detail ? 'shareDetail' : 'share', userAvatar: creator?.avatar || undefined });
      }
      const app = await chat.apps.findInTeam(auth.teamId, request.appId);
      const existing = await chatToOpen(auth, request.appId, request.chatId, { teamId: app.teamId });
      // The team's avatar on the user's messages, as the reference's team space.
      const team = await identity.findTeam(auth.teamId);
      return initData({ app, chat: existing, chatId: request.chatId, fields: 'team', userAvatar: team?.avatar || undefined });
    },

    async histories(auth: AuthContext, appId: string | undefined) {
      const { filter, limit, appId: resolvedAppId } = historyFilter(auth, appId, false);
      if (auth.authType !== 'outLink') await chat.apps.findInTeam(auth.teamId, resolvedAppId);
      const list = await repo.listChats(filter, limit);
      return list.map((c) => ({ chatId: c.chatId, updateTime: c.updateTime, appId: c.appId, customTitle: c.customTitle, title: c.title, top: c.top }));
    },

    async clear(auth: AuthContext, appId: string | undefined) {
      const { filter, appId: resolvedAppId } = historyFilter(auth, appId, true);
      if (auth.authType !== 'outLink') await chat.apps.findInTeam(auth.teamId, resolvedAppId);
      const ids = await repo.chatIds({ ...filter, appId: resolvedAppId });
      await repo.deleteChats(auth.teamId, resolvedAppId, ids);
    },

    async update(auth: AuthContext, input: { appId: string; chatId: string } & Partial<Pick<ChatDoc, 'title' | 'customTitle' | 'top'>>) {
      await chat.access.authChatCrud(auth, input.appId, input.chatId, 'write');
      await repo.updateChat(input.appId, input.chatId, { title: input.title, customTitle: input.customTitle, top: input.top }, new Date(chat.now()));
    },

    async deleteChat(auth: AuthContext, appId: string, chatId: string) {
      await chat.access.authChatCrud(auth, appId, chatId, 'write');
      await repo.deleteChats(auth.teamId, appId, [chatId]);
    },

    /** Deletes one item (`contentId`: its dataId); nothing without a chat and an item. */
    async deleteItem(auth: AuthContext, input: { appId: string; chatId?: string; contentId?: string }) {
      assertKeyMayUseApp(auth, input.appId);
      if (!input.chatId || !input.contentId) return;
      await chat.access.authChatCrud(auth, input.appId, input.chatId, 'write');
      await repo.deleteItem(auth.teamId, input.appId, input.chatId, input.contentId);
    },

    /** The node responses of one AI item, as this caller may see them ({} without ids, or for another item). */
    async resData(auth: AuthContext, input: { appId?: string; chatId?: string; dataId?: string }) {
      assertKeyMayUseApp(auth, input.appId);
      const { appId, chatId, dataId } = input;
      if (!appId || !chatId || !dataId) return {};
      await chat.access.authChatOrAppManager(auth, appId, chatId);
      const item = await repo.findItem(appId, chatId, dataId);
      if (item?.obj !== 'AI') return {};
      return shownResponses(item.responseData ?? [], await responseViewOfAuth(auth, appId));
    },

    /** Sets the given user feedback fields and clears the absent ones. */
    async setUserFeedback(auth: AuthContext, input: { appId: string; chatId: string; chatItemId?: string; dataId?: string; userGoodFeedback?: string; userBadFeedback?: string }) {
      const dataId = itemIdOf(input);
      await chat.access.authChatCrud(auth, input.appId, input.chatId, 'read');
      if (!(await repo.setFeedback(input.appId, input.chatId, dataId, input.userGoodFeedback, input.userBadFeedback))) {
        throw Errors.notFound(`Chat item ${dataId} not found in chat ${input.chatId}`);
      }
    },

    /** Annotates an answer with the dataset entry that corrects it (the logs page). */
    async setAdminFeedback(
      auth: AuthContext,
      input: { appId: string; chatId: string; chatItemId: string; datasetId: string; collectionId?: string; feedbackDataId: string; q: string; a?: string },
    ) {
      await chat.access.authChatOrAppManager(auth, input.appId, input.chatId);
      // The annotation points at a dataset entry: one the caller can read, in the dataset (and
      // collection) it names, so the stored annotation never points elsewhere.
      await chat.datasets.authorize(auth, input.datasetId, 'read');
      const entry = await chat.datasets.authorizeData(auth, input.feedbackDataId);
      if (entry.datasetId !== input.datasetId || (input.collectionId && entry.collectionId !== input.collectionId)) {
        throw Errors.missingParams(`Invalid field 'feedbackDataId': entry ${input.feedbackDataId} is not in the dataset${input.collectionId ? ' and collection' : ''} named`);
      }
      const feedback = { datasetId: input.datasetId, ...(input.collectionId ? { collectionId: input.collectionId } : {}), dataId: input.feedbackDataId, q: input.q, ...(input.a !== undefined ? { a: input.a } : {}) };
      if (!(await repo.setAdminFeedback(input.appId, input.chatId, input.chatItemId, feedback))) {
        throw Errors.notFound(`Chat item ${input.chatItemId} not found in chat ${input.chatId}`);
      }
    },

    async closeCustomFeedback(auth: AuthContext, input: { appId: string; chatId: string; chatItemId?: string; dataId?: string; index: number }) {
      const dataId = itemIdOf(input);
      await chat.access.authChatCrud(auth, input.appId, input.chatId, 'read');
      if (!(await repo.closeCustomFeedback(input.appId, input.chatId, dataId, input.index))) throw Errors.notFound(`Chat item ${dataId} not found`);
    },
  };
}

export type HistoryService = ReturnType<typeof createHistoryService>;
