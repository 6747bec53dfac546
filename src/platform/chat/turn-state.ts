/**
 * The first step of a chat turn (chat-run.service.ts runTurn): what the run starts from, the graph,
 * the question, the stored history and the runtime copy of the nodes, edges and variables.
 */
import { pendingInteractive } from '../../domain/workflow/chat-values.js';
import { nodeLookup } from '../../domain/workflow/interpolate.js';
import { historyLoadLimit, systemFirst } from '../../domain/workflow/messages.js';
import type { ChatItem, RuntimeEdge, RuntimeNode, StoreEdge, StoreNode } from '../../domain/workflow/types.js';
import { deepClone } from '../../infra/deep-clone.js';
import { Errors } from '../../infra/errors.js';
import { nanoid } from '../../infra/random-string.js';
import { countKeys, MAX_FREE_FORM_KEYS } from '../../infra/zod.js';
import type { RunGraph } from './app-source.js';
import type { ChatDoc, ChatItemDoc } from './chat.repo.js';
import type { ChatRunServiceDeps, ChatTurnRequest } from './chat-run.service.js';
import { graphOfNodes, type TurnSeals } from './interactive-seal.js';
import { formatChatTime } from './chat-time.js';

/** Where a run starts when no interactive node is waiting for an answer. */
const ENTRY_NODE_TYPES = new Set(['userGuide', 'workflowStart', 'pluginInput']);

/** A turn reads only these of the chat-run service's dependencies and of its request. */
type TurnStateDeps = Pick<ChatRunServiceDeps, 'repo' | 'apps' | 'now'> & {
  /** The seals of the turn for the graph it runs (interactive-seal.ts graphOf…). */
  sealsFor: (graphId: string) => TurnSeals;
};
type TurnStateRequest = Pick<ChatTurnRequest, 'app' | 'graph' | 'caller' | 'chatId' | 'chat' | 'items' | 'variables' | 'metadata' | 'responseChatItemId'>;

export interface TurnState {
  graph: RunGraph;
  /** What the turn hands out and resumes, bound to `graph` (its version, its draft, or the nodes the caller sent). */
  seals: TurnSeals;
  isPlugin: boolean;
  appId: string;
  chatId: string | undefined;
  question: ChatItem;
  /** The chat as stored before the turn (null: none yet, or no chat id). */
  chat: ChatDoc | null;
  /** The stored items the turn runs with (the newest last). */
  dbItems: ChatItemDoc[];
  histories: ChatItem[];
  /** The turn answers an interactive node whose question is stored (not sent with the request). */
  interactiveFromDb: boolean;
  nodes: RuntimeNode[];
  edges: RuntimeEdge[];
  runVariables: Record<string, unknown>;
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
 * The nodes and edges a run starts from: a copy of the graph (the run writes into it, and it comes
 * from the shared app cache), resumed where a pending interactive node left it.
 */
function runtimeGraph(graph: RunGraph, pending: ReturnType<typeof pendingInteractive>): { nodes: RuntimeNode[]; edges: RuntimeEdge[] } {
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
  return { nodes, edges };
}

export async function loadTurnState(deps: TurnStateDeps, request: TurnStateRequest): Promise<TurnState> {
  const { app, caller } = request;
  if (app.version === 'v1') throw Errors.missingParams('请升级工作流: this app uses the v1 workflow format, publish it again');
  // One read of the stored graph gives both what runs and the id its states are sealed under.
  const stored = request.graph ? undefined : await deps.apps.runGraph(app);
  const graph: RunGraph = request.graph ?? stored!;
  const seals = deps.sealsFor(stored ? stored.graphId : graphOfNodes(graph.nodes));
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
  const storedPending = dbItems.length > 0 ? pendingInteractive(dbItems.map((i) => ({ obj: i.obj, value: i.value }))) : undefined;
  const interactiveFromDb = Boolean(pending && storedPending);
  // A state the request brought is resumed only when this service handed it out (or the chat
  // stored it): else any node could be entered with outputs of the caller's making. A graph the
  // caller sent (the editor's debug chat) is theirs to run from anywhere: its states resume
  // unchecked there, and are sealed under its nodes, so never resume on the stored app.
  if (pending && pending !== storedPending && !request.graph) seals.assertResumable(appId, pending, storedPending);

  const { nodes, edges } = runtimeGraph(graph, pending);
  let variables: Record<string, unknown> = Object.assign({}, chat?.variables, request.variables);
  // Only a request bringing variables can grow the chat's (most send none).
  if (Object.keys(request.variables).length > 0) assertChatStaysBounded('variables', chat?.variables, variables);
  if (chat?.metadata && request.metadata) assertChatStaysBounded('metadata', chat.metadata, { ...chat.metadata, ...request.metadata });
  if (isPlugin) {
    const inputNode = nodes.find((n) => n.flowNodeType === 'pluginInput');
    for (const input of inputNode?.inputs ?? []) {
      if (request.variables[input.key] !== undefined) input.value = pluginInputValue(request.variables[input.key], input.valueType);
    }
    variables = {};
  }
  const runVariables: Record<string, unknown> = {
    userId: caller.uid,
    appId,
    // A run without a chat has no chatId (the reference's undefined): `{{chatId}}` stays as
    // written, as any variable without a value does, instead of reading ''.
    ...(chatId ? { chatId } : {}),
    responseChatItemId: request.responseChatItemId,
    histories,
    cTime: formatChatTime(deps.now(), caller.auth.timezone),
    ...variables,
  };
  return { graph, seals, isPlugin, appId, chatId, question, chat, dbItems, histories, interactiveFromDb, nodes, edges, runVariables };
}

/**
 * A chat keeps what its turns merge into it (variables, metadata), so each request's bound on
 * them (infra/zod.ts MAX_FREE_FORM_KEYS) holds for the merge too: turns of 1,000 new keys each
 * would otherwise grow a chat that every later turn reads back. A chat stored over the bound
 * before it existed keeps answering turns that do not grow it. 400, before anything runs.
 */
function assertChatStaysBounded(field: 'variables' | 'metadata', stored: Record<string, unknown> | undefined, merged: Record<string, unknown>): void {
  if (!stored) return;
  const mergedKeys = countKeys(merged);
  if (mergedKeys <= MAX_FREE_FORM_KEYS || mergedKeys <= countKeys(stored)) return;
  throw Errors.missingParams(`Invalid field '${field}': the chat would hold more than ${MAX_FREE_FORM_KEYS} keys in its ${field} (stored and sent, counted at every level of nesting)`);
}
