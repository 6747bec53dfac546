/**
 * One chat turn: its state (turn-state.ts), dispatch, save, usage.
 * Shared by v1/chat/completions, chatTest, the messaging channels and workflow/debug.
 */
import { resolveChatConfig } from '../../domain/workflow/chat-config.js';
import { dispatchWorkflow, WorkflowError } from '../../domain/workflow/dispatch.js';
import { usagesBeforeFailure, withUsagesBefore } from '../../domain/workflow/failure-usages.js';
import { chatTitle } from '../../domain/workflow/messages.js';
import { pureRunners } from '../../domain/workflow/pure-runners.js';
import type { ChatItem, ChatValue, DispatchResult, NodeRunner, RuntimeEdge, RuntimeNode, WorkflowEvent } from '../../domain/workflow/types.js';
import { gatewayError } from '../../infra/error-render.js';
import { Errors, isAppError } from '../../infra/errors.js';
import { LlmError } from '../../infra/llm-stream.js';
import { isProviderError } from '../../infra/provider-http.js';
import { nanoid } from '../../infra/random-string.js';
import type { AuthContext } from '../auth/types.js';
import type { UsageRepo } from '../identity/usage.repo.js';
import type { AppDoc, AppSource, RunGraph } from './app-source.js';
import type { ChatDoc, ChatRepo, ChatSource } from './chat.repo.js';
import type { CallerGuard } from './chat-access.js';
import { type ChatCaller, chatOwnerOf, chatSourceOf, usageSourceOf } from './chat-caller.js';
import { formatChatTime } from './chat-time.js';
import type { InteractiveSeals } from './interactive-seal.js';
import { createRunningTurnFeedbacks } from './running-turn-feedbacks.js';
import { loadTurnState, type TurnState } from './turn-state.js';
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

export interface ChatRunServiceDeps {
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
  /** Signs the interactive states runs stop with, and checks those requests bring back (interactive-seal.ts). */
  seals: InteractiveSeals;
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
  /**
   * Whether the turn's question item may be stored: false when it is known not to be (no save,
   * a continuation of a stored interactive node, a save failed before it or stopped for a chat
   * deleted meanwhile), so files only it would name can be taken back.
   */
  questionStored: boolean;
}

/**
 * A failed run as the client sees it: provider failures are 502, a node refusing its inputs or
 * the graph (WorkflowError: missing question, bad URL, unknown model, unsupported node) is 400.
 * Anything else is a bug: it stays unexpected (500 with the request id, logged).
 */
function toRunError(error: unknown): unknown {
  if (isAppError(error)) return error;
  if (error instanceof LlmError || isProviderError(error)) return gatewayError(error);
  if (error instanceof WorkflowError) return Errors.missingParams(error.message);
  return error;
}

/**
 * The member a turn's chat and usage are recorded under: the caller's, except in a team space,
 * whose visitors are not members: there it is the app's creator, as the reference records them.
 */
const turnOwnerOf = (request: Pick<ChatTurnRequest, 'caller' | 'app'>): string => (request.caller.teamSpace ? request.app.tmbId : request.caller.auth.tmbId);

/** Whether a turn's question item may be stored, set by its save as it goes. */
interface SavedQuestion {
  stored: boolean;
}

export function createChatRunService(deps: ChatRunServiceDeps) {
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
      signal: nodeDeps.signal,
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

  /** One turn in three steps: load what it starts from, dispatch the graph, then save and bill. */
  async function runTurn(request: ChatTurnRequest): Promise<ChatTurnResult> {
    // The states this turn hands out and resumes are its caller's, in its chat, of the graph it runs.
    const sealsFor = (graph: string) => deps.seals.forTurn({ caller: chatOwnerOf(request.caller), chatId: request.chatId || '', graph });
    const state = await loadTurnState({ repo: deps.repo, apps: deps.apps, now: deps.now, sealsFor }, request);
    // Filled by customFeedback nodes and calls while the turn runs; saved with its answer.
    const customFeedbacks: string[] = [];
    const result = await dispatchTurn(request, state, customFeedbacks).catch(async (error: unknown) => {
      // Model calls that answered before a later node failed are billed all the same: a caller
      // steering a later node into failing (a JSON body built from the question) got turns free.
      const ran = usagesBeforeFailure(error);
      if (ran.length > 0 && !(request.signal.reason instanceof TurnTakenOver)) await billTurn(request, { flowUsages: ran });
      throw error;
    });
    if (request.signal.reason instanceof TurnTakenOver) throw request.signal.reason;

    const { chatId } = state;
    const saved: SavedQuestion = { stored: false };
    if (request.save && chatId) {
      await saveTurn(request, { ...state, chatId }, result, customFeedbacks, saved).catch((error: unknown) => {
        // The answer is still delivered; the reference logs and swallows save failures too.
        deps.logError(error, 'saving the chat turn failed');
      });
    }
    const totalPoints = await billTurn(request, result);
    return Object.assign({}, result, { totalPoints, isPlugin: state.isPlugin, questionStored: saved.stored });
  }

  async function dispatchTurn(request: ChatTurnRequest, state: TurnState, customFeedbacks: string[]): Promise<DispatchResult> {
    const { app, caller, drained } = request;
    const { appId, chatId } = state;
    const nodeDeps = deps.nodeDeps({ teamId: caller.auth.teamId, appId, chatId: chatId ?? '', responseChatItemId: request.responseChatItemId, signal: request.signal, customFeedbacks });
    // Closed once the run ends, before the save reads the list: a later call writes into the saved item.
    const closeFeedbacks = request.save && chatId ? runningFeedbacks.open({ teamId: caller.auth.teamId, appId, chatId, dataId: request.responseChatItemId }, customFeedbacks) : undefined;
    try {
      return await dispatchWorkflow({
        nodes: state.nodes,
        edges: state.edges,
        variables: state.runVariables,
        histories: state.histories,
        query: state.question.value as ChatValue[],
        runners: runners(nodeDeps, 0, request.guard ?? deps.storedGraphGuard(app, state.graph.nodes, deps.supplierGuard(caller.auth))),
        mode: request.mode,
        stream: request.stream,
        maxRunTimes: MAX_RUN_TIMES,
        emit: request.emit,
        isAborted: () => request.signal.aborted,
        newId: () => nanoid(),
        now: () => Date.now(),
        pause: drained ? () => drained().then(yieldToEventLoop) : yieldToEventLoop,
        seal: (interactive) => state.seals.seal(appId, interactive),
      });
    } catch (error) {
      const mapped = toRunError(error);
      // A new error takes over what the old one carried; the same one carries it already.
      throw mapped === error ? error : withUsagesBefore(mapped, usagesBeforeFailure(error));
    } finally {
      closeFeedbacks?.();
    }
  }

  /** Records the turn's usage and charges the credential that paid; returns the points. */
  async function billTurn(request: ChatTurnRequest, result: Pick<DispatchResult, 'flowUsages'>): Promise<number> {
    const { app, caller } = request;
    const list = result.flowUsages;
    if (list.length === 0 && request.mode !== 'chat') return 0;
    const totalPoints = deps.usage.record(
      { teamId: caller.auth.teamId, tmbId: turnOwnerOf(request), source: usageSourceOf(caller, request.channel), appName: request.appName ?? app.name, appId: app._id, list },
      deps.now(),
    );
    // The turn is answered and saved by now: a failed charge (the key's or link's points) is
    // logged as a failed save is, never a failed turn a client would send again (and store twice).
    await deps.chargeCredential(caller, totalPoints).catch((error: unknown) => deps.logError(error, 'charging the chat turn to its API key or share link failed'));
    return totalPoints;
  }

  /** Saves the turn; `saved.stored` is set while its question item may be stored (see ChatTurnResult.questionStored). */
  async function saveTurn(request: ChatTurnRequest, state: TurnState & { chatId: string }, result: DispatchResult, customFeedbacks: string[], saved: SavedQuestion): Promise<void> {
    const { appId, chatId, question } = state;
    const { caller, app } = request;
    const now = deps.now();
    // A plugin run has no question: its chat is titled with the time, as the reference (YYYY-MM-DD HH:mm:ss dddd).
    const title = state.isPlugin ? formatChatTime(now, caller.auth.timezone) : chatTitle(question.value as ChatValue[]);
    if (state.interactiveFromDb) {
      await saveContinuation(state, result, customFeedbacks, title, now);
      return;
    }
    const base = { teamId: caller.auth.teamId, tmbId: turnOwnerOf(request), appId, chatId };
    const chatConfig = resolveChatConfig(state.graph.nodes, state.graph.chatConfig);
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
        metadata: { ...(state.chat?.metadata ?? {}), ...(request.metadata ?? {}), ...(request.originIp ? { originIp: request.originIp } : {}) },
      },
      now,
      state.chat?._id,
    );
    if (!chatDocId) return;
    // From here on the item may land, even when the insert answers an error.
    saved.stored = true;
    const itemIds = await deps.repo.insertItems(
      base,
      [
        { dataId: question.dataId ?? nanoid(22), obj: 'Human', value: question.value as ChatValue[] },
        { dataId: request.responseChatItemId, obj: 'AI', value: result.assistantResponses, responseData: result.flowResponses, customFeedbacks },
      ],
      now,
    );
    if (!(await deps.repo.chatStands(chatDocId))) {
      await deps.repo.deleteItemsById(base.teamId, itemIds);
      saved.stored = false;
      return;
    }
    // An app deleted during the turn takes the turn with it (the answer has been given). Checked
    // before the touch, whose write would make the check read the app again.
    if (!(await deps.apps.standsAfterSave(app))) return;
    if (caller.auth.tmbId === app.tmbId && !caller.shareId && !caller.teamSpace && chatSourceOf(caller, request.channel) === 'online') {
      await deps.apps.touch(app, now);
    }
  }

  /**
   * The answer to a stored interactive node: appended to the AI item that asked it as stored now
   * (the turn read it before its run; what was written since stays, see chat-item-updates.repo.ts appendContinuation).
   */
  async function saveContinuation(state: TurnState & { chatId: string }, result: DispatchResult, customFeedbacks: string[], title: string, now: Date): Promise<void> {
    const [lastAi] = state.dbItems.filter((item) => item.obj === 'AI').slice(-1);
    const at = (lastAi?.value.length ?? 0) - 1;
    if (lastAi && lastAi.value[at]?.type === 'interactive') {
      const selected = state.question.value.find((v) => v.type === 'text')?.text.content ?? '';
      await deps.repo.appendContinuation(lastAi, at, selected, { value: result.assistantResponses, responseData: result.flowResponses, customFeedbacks });
    }
    await deps.repo.setChatAfterContinue(state.appId, state.chatId, state.chat?._id, title, result.newVariables, now);
  }

  /** workflow/debug: runs the entry nodes only and reports what would run next. */
  async function debugRun(input: { app: AppDoc; caller: ChatCaller; nodes: RuntimeNode[]; edges: RuntimeEdge[]; variables: Record<string, unknown>; signal: AbortSignal; guard: CallerGuard }) {
    const appId = input.app._id;
    const nodeDeps = deps.nodeDeps({ teamId: input.caller.auth.teamId, appId, chatId: '', responseChatItemId: '', signal: input.signal, customFeedbacks: [] });
    const recordDebugUsage = (list: DispatchResult['flowUsages']) =>
      deps.usage.record({ teamId: input.caller.auth.teamId, tmbId: input.caller.auth.tmbId, source: 'fastgpt', appName: '工作流Debug', appId, list }, deps.now());
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
      // A step that failed after a model call answered is recorded all the same, as a turn is.
      const ran = usagesBeforeFailure(error);
      if (ran.length > 0) recordDebugUsage(ran);
      throw toRunError(error);
    }
    recordDebugUsage(result.flowUsages);
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
