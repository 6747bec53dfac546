/**
 * One chat turn: history, graph, variables, entry nodes, dispatch, save, usage.
 * Shared by v1/chat/completions, chatTest, the messaging channels and workflow/debug.
 */
import { resolveChatConfig } from '../../domain/workflow/chat-config.js';
import { pendingInteractive } from '../../domain/workflow/chat-values.js';
import { dispatchWorkflow, WorkflowError } from '../../domain/workflow/dispatch.js';
import { nodeLookup } from '../../domain/workflow/interpolate.js';
import { chatTitle, historyLoadLimit, systemFirst } from '../../domain/workflow/messages.js';
import { pureRunners } from '../../domain/workflow/pure-runners.js';
import type { ChatItem, ChatValue, DispatchResult, NodeRunner, RuntimeEdge, RuntimeNode, StoreEdge, StoreNode, WorkflowEvent } from '../../domain/workflow/types.js';
import { deepClone } from '../../infra/deep-clone.js';
import { Errors, isAppError } from '../../infra/errors.js';
import { LlmError } from '../../infra/llm-stream.js';
import { isProviderError } from '../../infra/provider-http.js';
import { createRunningTurnFeedbacks } from './running-turn-feedbacks.js';
import type { AuthContext } from '../auth/types.js';
import type { UsageRepo } from '../identity/usage.repo.js';
import type { AppDoc, AppSource, RunGraph } from './app-source.js';
import type { ChatDoc, ChatItemDoc, ChatRepo, ChatSource } from './chat.repo.js';
import type { CallerGuard } from './chat-access.js';
import { type ChatCaller, chatSourceOf, usageSourceOf } from './chat-caller.js';
import { formatChatTime } from './chat-time.js';
import { nanoid } from './ids.js';
import { createCompositeRunners } from './workflow-nodes/composite-nodes.js';
import { createExtraRunners } from './workflow-nodes/extra-nodes.js';
import { createHttpRunners } from './workflow-nodes/http-node.js';
import { createIoRunners } from './workflow-nodes/io-nodes.js';
import { createLlmRunners } from './workflow-nodes/llm-nodes.js';
import type { NodeDeps, RunNodeDeps } from './workflow-nodes/node-deps.js';
import { createToolRunner } from './workflow-nodes/tool-node.js';

export const MAX_RUN_TIMES = 200;

/**
 * The abort reason of a turn another process took over (a messaging-channel job whose lease
 * lapsed while this process stalled): the other run is the turn, so this one ends unsaved and
 * unbilled, where a turn whose client hung up keeps and bills what ran.
 */
export class TurnTakenOver extends Error {
  constructor() {
    super('the turn was taken over by another process');
    this.name = 'TurnTakenOver';
  }
}

/**
 * Between node checks a turn lets the process serve others: nodes that never wait for I/O (text
 * editors, variable updates, loops of them) would otherwise run a whole 200-node turn in one go.
 */
const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));
/** Where a run starts when no interactive node is waiting for an answer. */
const ENTRY_NODE_TYPES = new Set(['userGuide', 'workflowStart', 'pluginInput']);

export interface ChatRunDeps {
  repo: ChatRepo;
  apps: AppSource;
  usage: UsageRepo;
  now: () => Date;
  /** Per-run node dependencies (LLM resolution, dataset search, HTTP). */
  nodeDeps: (base: RunNodeDeps) => NodeDeps;
  logError: (error: unknown, message: string) => void;
  /** Adds points to the credential that paid (API key, share link). */
  chargeCredential: (caller: ChatCaller, points: number) => Promise<void>;
  /** Who answers for ids a caller supplies to a stored graph (chat-access.ts supplierGuard). */
  supplierGuard: (auth: AuthContext) => CallerGuard;
  /** What a stored graph may read when it runs (chat-access.ts): its own ids with its owner's rights, others with the supplier's too. */
  storedGraphGuard: (app: { teamId: string; tmbId: string }, nodes: readonly unknown[], supplier: CallerGuard) => CallerGuard;
}

export interface ChatTurnRequest {
  app: AppDoc;
  /** The graph to run; the latest published one when absent. */
  graph?: RunGraph;
  /** Set when the caller sent the graph: what it may read (see chat-access.ts); else the app owner's. */
  guard?: CallerGuard;
  caller: ChatCaller;
  chatId?: string;
  /** The chat as the caller already read it (null: none yet); read here when undefined. */
  chat?: ChatDoc | null;
  items: ChatItem[];
  variables: Record<string, unknown>;
  responseChatItemId: string;
  stream: boolean;
  mode: 'chat' | 'test';
  emit: (event: WorkflowEvent) => void;
  /**
   * Resolves once the client took what the turn streamed so far (or its connection closed):
   * awaited between nodes, so a client that stops reading pauses its turn instead of buffering it.
   */
  drained?: () => Promise<void>;
  signal: AbortSignal;
  save: boolean;
  channel?: ChatSource;
  appName?: string;
  originIp?: string;
  metadata?: Record<string, unknown>;
}

export interface ChatTurnResult extends DispatchResult {
  totalPoints: number;
  isPlugin: boolean;
}

/**
 * A failed run as the client sees it: provider failures are 502, a node refusing its inputs or
 * the graph (WorkflowError: missing question, bad URL, unknown model, unsupported node) is 400.
 * Anything else is a bug: it stays unexpected (500 with the request id, logged).
 */
function toRunError(error: unknown): unknown {
  if (isAppError(error)) return error;
  if (error instanceof LlmError) return Errors.badGateway(error.message);
  if (isProviderError(error)) return Errors.badGateway(error.message);
  if (error instanceof WorkflowError) return Errors.missingParams(error.message);
  return error;
}

function pluginQuestion(nodes: StoreNode[], variables: Record<string, unknown>): ChatItem {
  const input = nodes.find((n) => n.flowNodeType === 'pluginInput');
  const filled = (input?.inputs ?? []).map((item) => ({ ...item, value: variables[item.key] ?? item.defaultValue }));
  return { dataId: nanoid(24), obj: 'Human', value: [{ type: 'text', text: { content: JSON.stringify(filled) } }] };
}

function pluginInputValue(value: unknown, valueType?: string): unknown {
  if (typeof value !== 'string' || ['string', 'number', 'boolean', undefined].includes(valueType)) return value;
  try {
    return JSON.parse(value) as unknown;
  } catch {
    return value;
  }
}

/**
 * The member a turn's chat and usage are recorded under: the caller's, except in a team space,
 * whose visitors are not members: there it is the app's creator, as the reference records them.
 */
const turnOwnerOf = (request: Pick<ChatTurnRequest, 'caller' | 'app'>): string => (request.caller.teamSpace ? request.app.tmbId : request.caller.auth.tmbId);

export function createChatRunService(deps: ChatRunDeps) {
  /** Where the customFeedback endpoint finds the turns of this process (running-turn-feedbacks.ts). */
  const runningFeedbacks = createRunningTurnFeedbacks();

  /**
   * The node runners of one graph. Its nodes search only datasets and open only apps the guard
   * allows, values wired at run time included: the caller's rights for a graph the caller sent,
   * storedGraphGuard for a stored one; an app it opens runs its own stored graph under a guard
   * built from that app's owner and this run's guard.
   */
  function runners(nodeDeps: NodeDeps, depth: number, guard: CallerGuard): Record<string, NodeRunner> {
    const search = nodeDeps.searchDatasets;
    // The guard may leave datasets out (a stored graph's deleted ones): the search reads what it allows.
    const guardedSearch: NodeDeps['searchDatasets'] = async (request) => search!(Object.assign({}, request, { datasetIds: await guard.datasets(request.datasetIds) }));
    const ownDeps: NodeDeps = search ? Object.assign({}, nodeDeps, { searchDatasets: guardedSearch }) : nodeDeps;
    const composite = createCompositeRunners({
      depth,
      runSystemPlugin: nodeDeps.runSystemPlugin,
      customFeedbacks: nodeDeps.customFeedbacks,
      loadGraph: async (childId) => {
        await guard.app(childId);
        const child = await deps.apps.findInTeam(nodeDeps.teamId, childId);
        const graph = await deps.apps.runGraph(child);
        // The child's own ids with its owner's rights; what this run hands it, with this run's too.
        const childGuard = deps.storedGraphGuard(child, graph.nodes, guard);
        return { graph, type: child.type, name: child.name, avatar: child.avatar, runners: runners(nodeDeps, depth + 1, childGuard) };
      },
    });
    // The agent's tools are nodes of the same graph: the same guard applies.
    const tools = createToolRunner(ownDeps, () => runners(nodeDeps, depth + 1, guard));
    // Object.assign, not spreads: merging into a spread's result costs microseconds (see docs/decisions.md#object-spread).
    return Object.assign({}, pureRunners, createLlmRunners(ownDeps), createIoRunners(ownDeps), createHttpRunners(ownDeps), createExtraRunners(ownDeps), composite, { tools });
  }

  async function runTurn(request: ChatTurnRequest): Promise<ChatTurnResult> {
    const { app, caller } = request;
    if (app.version === 'v1') throw Errors.missingParams('请升级工作流: this app uses the v1 workflow format, publish it again');
    const graph = request.graph ?? (await deps.apps.runGraph(app));
    const isPlugin = app.type === 'plugin';
    const appId = app._id;
    const chatId = request.chatId || undefined;

    // The question: the last request item, or a synthetic one holding the plugin inputs.
    const requestItems = [...request.items];
    let question: ChatItem;
    if (isPlugin) question = pluginQuestion(graph.nodes, request.variables);
    else {
      const last = requestItems.pop();
      if (!last) throw Errors.missingParams('User question is empty');
      question = last;
    }

    // Rounds of history, capped (messages.ts MAX_HISTORY_ROUNDS): two items (question, answer) each.
    const limit = historyLoadLimit(graph.nodes);
    const [dbItems, chat] = chatId
      ? await Promise.all([deps.repo.lastItems(appId, chatId, limit * 2), request.chat !== undefined ? request.chat : deps.repo.findChat(appId, chatId)])
      : [[], null];
    const histories = systemFirst([...dbItems.map((item) => ({ dataId: item.dataId, obj: item.obj, value: item.value })), ...requestItems]);
    const pending = pendingInteractive(histories);
    const interactiveFromDb = Boolean(pending && dbItems.length > 0 && pendingInteractive(dbItems.map((i) => ({ obj: i.obj, value: i.value }))));

    // The run writes into its nodes: a copy of the graph (it comes from the shared app cache).
    const nodes = deepClone(graph.nodes) as RuntimeNode[];
    for (const node of nodes) {
      node.isEntry = pending ? pending.entryNodeIds.includes(node.nodeId) : ENTRY_NODE_TYPES.has(node.flowNodeType);
    }
    const edges: RuntimeEdge[] = pending ? deepClone(pending.memoryEdges) : graph.edges.map((edge: StoreEdge) => Object.assign({}, edge, { status: 'waiting' as const }));
    if (pending) {
      const nodeById = nodeLookup(nodes);
      for (const saved of pending.nodeOutputs) {
        const output = nodeById.get(saved.nodeId)?.outputs.find((o) => o.key === saved.key);
        if (output) output.value = saved.value;
      }
    }

    let variables: Record<string, unknown> = Object.assign({}, chat?.variables, request.variables);
    if (isPlugin) {
      const inputNode = nodes.find((n) => n.flowNodeType === 'pluginInput');
      for (const input of inputNode?.inputs ?? []) {
        if (request.variables[input.key] !== undefined) input.value = pluginInputValue(request.variables[input.key], input.valueType);
      }
      variables = {};
    }
    const now = deps.now();
    const runVariables: Record<string, unknown> = {
      userId: caller.uid,
      appId,
      // A run without a chat has no chatId (the reference's undefined): `{{chatId}}` stays as
      // written, as any variable without a value does, instead of reading ''.
      ...(chatId ? { chatId } : {}),
      responseChatItemId: request.responseChatItemId,
      histories,
      cTime: formatChatTime(now, caller.auth.timezone),
      ...variables,
    };

    const customFeedbacks: string[] = [];
    const { drained } = request;
    const nodeDeps = deps.nodeDeps({ teamId: caller.auth.teamId, appId, chatId: chatId ?? '', responseChatItemId: request.responseChatItemId, signal: request.signal, customFeedbacks });
    // Closed once the run ends, before the save reads the list: a later call writes into the saved item.
    const closeFeedbacks = request.save && chatId ? runningFeedbacks.open({ teamId: caller.auth.teamId, appId, chatId, dataId: request.responseChatItemId }, customFeedbacks) : undefined;
    let result: DispatchResult;
    try {
      result = await dispatchWorkflow({
        nodes,
        edges,
        variables: runVariables,
        histories,
        query: question.value as ChatValue[],
        runners: runners(nodeDeps, 0, request.guard ?? deps.storedGraphGuard(app, graph.nodes, deps.supplierGuard(caller.auth))),
        mode: request.mode,
        stream: request.stream,
        maxRunTimes: MAX_RUN_TIMES,
        emit: request.emit,
        isAborted: () => request.signal.aborted,
        newId: () => nanoid(),
        now: () => Date.now(),
        pause: drained ? () => drained().then(yieldToEventLoop) : yieldToEventLoop,
      });
    } catch (error) {
      throw toRunError(error);
    } finally {
      closeFeedbacks?.();
    }
    if (request.signal.reason instanceof TurnTakenOver) throw request.signal.reason;

    if (request.save && chatId) {
      await saveTurn({ request, appId, chatId, chat, dbItems, question, result, interactiveFromDb, isPlugin, graph, customFeedbacks }).catch((error: unknown) => {
        // The answer is still delivered; the reference logs and swallows save failures too.
        deps.logError(error, 'saving the chat turn failed');
      });
    }

    const list = result.flowUsages;
    let totalPoints = 0;
    if (list.length > 0 || request.mode === 'chat') {
      totalPoints = deps.usage.record(
        { teamId: caller.auth.teamId, tmbId: turnOwnerOf(request), source: usageSourceOf(caller, request.channel), appName: request.appName ?? app.name, appId, list },
        deps.now(),
      );
      // The turn is answered and saved by now: a failed charge (the key's or link's points) is
      // logged as a failed save is, never a failed turn a client would send again (and store twice).
      await deps.chargeCredential(caller, totalPoints).catch((error: unknown) => deps.logError(error, 'charging the chat turn to its API key or share link failed'));
    }
    return Object.assign({}, result, { totalPoints, isPlugin });
  }

  async function saveTurn(input: {
    request: ChatTurnRequest;
    appId: string;
    chatId: string;
    chat: ChatDoc | null;
    /** The stored items the turn was run with (the newest last). */
    dbItems: ChatItemDoc[];
    question: ChatItem;
    result: DispatchResult;
    interactiveFromDb: boolean;
    isPlugin: boolean;
    graph: RunGraph;
    customFeedbacks: string[];
  }): Promise<void> {
    const { request, appId, chatId, question, result } = input;
    const { caller, app } = request;
    const now = deps.now();
    // A plugin run has no question: its chat is titled with the time, as the reference (YYYY-MM-DD HH:mm:ss dddd).
    const title = input.isPlugin ? formatChatTime(now, caller.auth.timezone) : chatTitle(question.value as ChatValue[]);
    if (input.interactiveFromDb) {
      const [lastAi] = input.dbItems.filter((item) => item.obj === 'AI').slice(-1);
      const last = lastAi?.value[lastAi.value.length - 1];
      if (lastAi && last?.type === 'interactive') {
        last.interactive.params.userSelectedVal = question.value.find((v) => v.type === 'text')?.text.content ?? '';
        await deps.repo.replaceItemValue(lastAi._id, [...lastAi.value, ...result.assistantResponses], [...(lastAi.responseData ?? []), ...result.flowResponses], [...(lastAi.customFeedbacks ?? []), ...input.customFeedbacks]);
      }
      await deps.repo.setChatAfterContinue(appId, chatId, input.chat?._id, title, result.newVariables, now);
      return;
    }
    const base = { teamId: caller.auth.teamId, tmbId: turnOwnerOf(request), appId, chatId };
    const chatConfig = resolveChatConfig(input.graph.nodes, input.graph.chatConfig);
    // The chat (whose it is) before its items: a save stopped between the two leaves an empty chat
    // of its owner, never items without one, which the next caller of that chat id would take over.
    // A delete (chat.repo.ts deleteChats: items, chat, items again) may land anywhere in this save.
    // Before the chat write: a chat the turn read is updated by its document id only, so a deleted
    // one is neither written nor made again (nothing saved); a new one is made by this write.
    // After it, with C the chat document written: an item acknowledged before the delete's second
    // items pass began is removed by that pass; any other was acknowledged after it began, hence
    // after C was deleted, so the check below, which starts later, finds C gone and removes it.
    // A chat made since under the same id (another visitor's) is another document: never ours.
    const chatDocId = await deps.repo.upsertChat(
      {
        ...base,
        title,
        source: chatSourceOf(caller, request.channel),
        shareId: caller.shareId,
        outLinkUid: caller.shareId || caller.teamSpace || caller.customUid ? caller.uid : undefined,
        variableList: chatConfig.variables,
        welcomeText: chatConfig.welcomeText,
        variables: result.newVariables,
        metadata: { ...(input.chat?.metadata ?? {}), ...(request.metadata ?? {}), ...(request.originIp ? { originIp: request.originIp } : {}) },
      },
      now,
      input.chat?._id,
    );
    if (!chatDocId) return;
    const itemIds = await deps.repo.insertItems(
      base,
      [
        { dataId: question.dataId ?? nanoid(22), obj: 'Human', value: question.value as ChatValue[] },
        { dataId: request.responseChatItemId, obj: 'AI', value: result.assistantResponses, responseData: result.flowResponses, customFeedbacks: input.customFeedbacks },
      ],
      now,
    );
    if (!(await deps.repo.chatStands(chatDocId))) {
      await deps.repo.deleteItemsById(base.teamId, itemIds);
      return;
    }
    // An app deleted during the turn takes the turn with it (the answer has been given). Checked
    // before the touch, whose write would make the check read the app again.
    if (!(await deps.apps.standsAfterSave(app))) return;
    if (caller.auth.tmbId === app.tmbId && !caller.shareId && !caller.teamSpace && chatSourceOf(caller, request.channel) === 'online') {
      await deps.apps.touch(app, now);
    }
  }

  /** workflow/debug: runs the entry nodes only and reports what would run next. */
  async function debugRun(input: { app: AppDoc; caller: ChatCaller; nodes: RuntimeNode[]; edges: RuntimeEdge[]; variables: Record<string, unknown>; signal: AbortSignal; guard: CallerGuard }) {
    const appId = input.app._id;
    const nodeDeps = deps.nodeDeps({ teamId: input.caller.auth.teamId, appId, chatId: '', responseChatItemId: '', signal: input.signal, customFeedbacks: [] });
    let result: DispatchResult;
    try {
      result = await dispatchWorkflow({
        nodes: input.nodes,
        edges: input.edges,
        variables: { userId: input.caller.uid, appId, chatId: '', responseChatItemId: '', histories: [], cTime: deps.now().toISOString(), ...input.variables },
        histories: [],
        query: [],
        runners: runners(nodeDeps, 0, input.guard),
        mode: 'debug',
        maxRunTimes: MAX_RUN_TIMES,
        isAborted: () => input.signal.aborted,
        newId: () => nanoid(),
        now: () => Date.now(),
        pause: yieldToEventLoop,
      });
    } catch (error) {
      throw toRunError(error);
    }
    deps.usage.record(
      { teamId: input.caller.auth.teamId, tmbId: input.caller.auth.tmbId, source: 'fastgpt', appName: '工作流Debug', appId, list: result.flowUsages },
      deps.now(),
    );
    return {
      finishedNodes: result.debugResponse.finishedNodes,
      finishedEdges: result.debugResponse.finishedEdges,
      nextStepRunNodes: result.debugResponse.nextStepRunNodes,
      newVariables: result.newVariables,
      flowResponses: result.flowResponses,
    };
  }

  return { runTurn, debugRun, runningFeedbacks: { listOf: runningFeedbacks.listOf } };
}

export type ChatRunService = ReturnType<typeof createChatRunService>;
