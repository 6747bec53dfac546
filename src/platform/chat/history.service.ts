/** Chat windows and items: init, histories, rename/pin, delete, feedback. */
import { resolveChatConfig } from '../../domain/workflow/chat-config.js';
import type { StoreNode } from '../../domain/workflow/types.js';
import { Errors } from '../../infra/errors.js';
import { requireHexId } from '../../infra/mongo.js';
import type { AuthContext } from '../auth/types.js';
import type { AppDoc } from './app-source.js';
import type { ChatDoc, ChatItemDoc, ChatQuery } from './chat.repo.js';
import { assertKeyMayUseApp } from './chat-access.js';
import { callerFromAuth } from './chat-caller.js';
import type { ChatModule } from './chat-module.js';
import { type ResponseView, responseViewOf, shownResponses } from './messages.js';

const DAY_MS = 24 * 60 * 60 * 1000;

type Responses = Record<string, unknown>[];

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

export function createHistoryService(chat: ChatModule) {
  const { repo } = chat;

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
    const items = input.chatId && input.chat ? await repo.lastItems(appId, input.chatId, 30) : [];
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
    initData,

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

    async resData(auth: AuthContext, appId: string, chatId: string, dataId: string) {
      await chat.access.authChatOrAppManager(auth, appId, chatId);
      const item = await repo.findItem(appId, chatId, dataId);
      if (item?.obj !== 'AI') return {};
      return shownResponses(item.responseData ?? [], await responseViewOfAuth(auth, appId));
    },
  };
}

export type HistoryService = ReturnType<typeof createHistoryService>;
