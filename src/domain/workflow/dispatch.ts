/**
 * The workflow dispatcher: starts at the entry nodes, decides per node whether
 * it runs, is skipped or waits from the states of its incoming edges, and propagates results
 * along edges. Runners are injected; this module does no I/O.
 */
import { EdgeIndex } from './edge-index.js';
import { usagesBeforeFailure, withUsagesBefore } from './failure-usages.js';
import { graphSizeProblem } from './graph-limits.js';
import { buildNodeParams, formatValueType, nodeLookup } from './interpolate.js';
import { OutputBudget } from './output-budget.js';
import {
  type ChatItem,
  type ChatValue,
  type DispatchResult,
  type NodeResponse,
  type NodeRunResult,
  type NodeRunner,
  type NodeUsage,
  type RunBudget,
  type RunMode,
  type RuntimeEdge,
  type RuntimeNode,
  SELECTED_TOOLS_HANDLE,
  type WorkflowEvent,
  type WorkflowInteractive,
} from './types.js';
import { MissingInputError, NodeInputError, WorkflowError } from './workflow-error.js';

export { MissingInputError, NodeInputError, WorkflowError };

export interface DispatchOptions {
  nodes: RuntimeNode[];
  edges: RuntimeEdge[];
  variables: Record<string, unknown>;
  histories: ChatItem[];
  query: ChatValue[];
  runners: Record<string, NodeRunner>;
  mode: RunMode;
  stream?: boolean;
  /** Node runs allowed in this run when no shared budget is given (default 200). */
  maxRunTimes?: number;
  /** A budget shared with the run this one is nested in: its runs spend from the same total. */
  runBudget?: RunBudget;
  /** Characters the turn may produce when the run budget carries none (default MAX_TURN_OUTPUT_CHARS). */
  maxOutputChars?: number;
  emit?: (event: WorkflowEvent) => void;
  isAborted?: () => boolean;
  /** Id for each node response; injected so tests are deterministic. */
  newId: () => string;
  /** Milliseconds clock for runningTime. */
  now?: () => number;
  /**
   * Awaited before each node is checked. The host hands the event loop back there (a
   * setImmediate): node runs that never wait for I/O would otherwise hold it for the whole turn.
   * By default a microtask, which lets other work of this process wait.
   */
  pause?: () => Promise<void>;
  /**
   * Marks the state a run stops with at an interactive node, so that a later request resuming
   * from it can be told from one a client made up (the platform signs it). None by default.
   */
  seal?: (interactive: WorkflowInteractive) => WorkflowInteractive;
}

/** Variables never persisted into chat.variables (userId is kept, as the reference does). */
export const NON_PERSISTED_VARIABLES = ['appId', 'chatId', 'responseChatItemId', 'histories', 'cTime'] as const;

type NodeStatus = 'run' | 'skip' | 'wait';

/**
 * Whether a node runs, is skipped or waits, from the states of its incoming edges. An entry of a
 * chat run (a start node, a resumed userSelect, a tool run's tool) runs whatever its edges say
 * (`trustEntry`); a debug step's entries are the editor's `nextStepRunNodes`, which hold the
 * targets of skipped edges and merges still waiting for a branch, so their edges decide, as the
 * reference decides every node.
 */
export function nodeRunStatus(node: RuntimeNode, edges: EdgeIndex, trustEntry = true): NodeStatus {
  if (node.isEntry && trustEntry) return 'run';
  const { common, recursive } = edges.split(node.nodeId);
  if (common.length === 0 && recursive.length === 0) return 'run';
  const all = (list: RuntimeEdge[], test: (edge: RuntimeEdge) => boolean) => list.length > 0 && list.every(test);
  if (all(common, (e) => e.status === 'skipped') || all(recursive, (e) => e.status === 'skipped')) return 'skip';
  if (all(common, (e) => e.status !== 'waiting') || all(recursive, (e) => e.status !== 'waiting')) return 'run';
  return 'wait';
}

/** Merges consecutive text values, as the reference does at the end of a run. */
export function mergeAssistantValues(values: ChatValue[]): ChatValue[] {
  const out: ChatValue[] = [];
  for (const value of values) {
    const last = out[out.length - 1];
    if (value.type === 'text' && last?.type === 'text') {
      out[out.length - 1] = { type: 'text', text: { content: last.text.content + value.text.content } };
    } else out.push(value);
  }
  return out;
}

const NOT_PERSISTED = new Set<string>(NON_PERSISTED_VARIABLES);

function isEmptyToolResponse(value: unknown): boolean {
  if (Array.isArray(value)) return value.length === 0;
  return typeof value === 'object' && value !== null && Object.keys(value).length === 0;
}

export function persistedVariables(variables: Record<string, unknown>): Record<string, unknown> {
  // Copied key by key rather than spread and deleted from: deleting turns an object slow.
  const out: Record<string, unknown> = {};
  // (A `__proto__` key, which requests cannot carry, would set the copy's prototype: skipped.)
  for (const key of Object.keys(variables)) if (!NOT_PERSISTED.has(key) && key !== '__proto__') out[key] = variables[key];
  return out;
}

export async function dispatchWorkflow(options: DispatchOptions): Promise<DispatchResult> {
  const { nodes, edges, runners, mode } = options;
  const tooLarge = graphSizeProblem(nodes, edges);
  if (tooLarge) throw new WorkflowError(tooLarge);
  const now = options.now ?? (() => 0);
  const isAborted = options.isAborted ?? (() => false);
  const pause = options.pause ?? (() => Promise.resolve());
  const variables = options.variables;
  let histories = options.histories;
  const budget: RunBudget = options.runBudget ?? { remaining: options.maxRunTimes ?? 200 };
  budget.output ??= new OutputBudget(options.maxOutputChars);
  const produced = budget.output;
  const sink = options.emit ?? (() => undefined);
  // Answer text is counted once its node returns it; other events (variables, tool calls) as they go out.
  const emit = (event: WorkflowEvent) => {
    if (event.event !== 'answer' && event.event !== 'fastAnswer') produced.add(event);
    sink(event);
  };

  const flowResponses: NodeResponse[] = [];
  const flowUsages: NodeUsage[] = [];
  const assistantResponses: ChatValue[] = [];
  const toolResponses: unknown[] = [];
  const debugNextNodes = new Map<string, RuntimeNode>();
  let interactiveStop: { nodeId: string; payload: NonNullable<NodeRunResult['interactive']> } | undefined;

  const nodeById = nodeLookup(nodes);
  const edgeIndex = new EdgeIndex(edges);

  const runNode = async (node: RuntimeNode): Promise<NodeRunResult> => {
    budget.remaining -= 1;
    if (node.showStatus) emit({ event: 'flowNodeStatus', status: 'running', name: node.name ?? node.flowNodeType });
    // Own keys only: `constructor` or `toString` would find Object.prototype's functions and "run".
    const runner = Object.hasOwn(runners, node.flowNodeType) ? runners[node.flowNodeType] : undefined;
    if (!runner) throw new WorkflowError(`Node type '${node.flowNodeType}' (node '${node.name ?? node.nodeId}') is not supported`);
    const started = now();
    let result: NodeRunResult;
    try {
      const params = buildNodeParams(node, nodeById, variables);
      result = await runner({
        node,
        params,
        variables,
        histories,
        query: options.query,
        runtimeNodes: nodes,
        nodeById,
        runtimeEdges: edges,
        // A node sees a debug step as a test run (as the reference hands it): only the walk differs.
        mode: mode === 'debug' ? 'test' : mode,
        stream: options.stream ?? false,
        emit,
        isAborted,
        runBudget: budget,
        pause: options.pause,
      });
    } catch (error) {
      // A runner that trips over an input of another shape than it reads (a stored value the
      // editor never writes) fails the turn as a workflow it cannot run, naming the node.
      // What a nested run used before it failed goes on with the error that replaces its own.
      if (error instanceof TypeError) throw withUsagesBefore(new WorkflowError(`Node '${node.name ?? node.nodeId}' (${node.flowNodeType}) cannot use its inputs: ${error.message}`), usagesBeforeFailure(error));
      // A node refusing its inputs is named here, for every runner (a plain WorkflowError: named once).
      if (error instanceof NodeInputError) throw withUsagesBefore(new WorkflowError(error.forNode(node)), usagesBeforeFailure(error));
      throw error;
    }
    if (result.responseData) {
      const response: NodeResponse = {
        id: options.newId(),
        nodeId: node.nodeId,
        moduleName: node.name ?? node.flowNodeType,
        moduleType: node.flowNodeType,
        runningTime: Math.round((now() - started) / 10) / 100,
        ...result.responseData,
      };
      // Counted as the object the run reports: a node that ran this run returns it again (nested details).
      produced.add(response);
      flowResponses.push(response);
    }
    produced.add(result.assistantResponses ?? result.answerText ?? result.outputs?.answerText);
    const overrun = produced.problem();
    // The node ran (its model answered): what it used is billed with the failure.
    if (overrun) throw withUsagesBefore(new WorkflowError(`Node '${node.name ?? node.nodeId}' (${node.flowNodeType}): ${overrun}`), result.usages ?? []);
    // Required outputs left undefined fall back to their default value.
    const outputs = { ...(result.outputs ?? {}) };
    for (const output of node.outputs) {
      if (output.required && outputs[output.key] === undefined && output.defaultValue !== undefined) {
        outputs[output.key] = formatValueType(output.defaultValue, output.valueType);
      }
    }
    return Object.assign({}, result, { outputs });
  };

  const afterNode = (node: RuntimeNode) => {
    node.isEntry = false;
    for (const edge of edgeIndex.into(node.nodeId)) edge.status = 'waiting';
  };

  /** Stores a result and marks outgoing edges; returns the next nodes (active first). */
  const propagate = (node: RuntimeNode, result: NodeRunResult, skipped: boolean): { active: RuntimeNode[]; skip: RuntimeNode[] } => {
    if (!skipped && result.usages) flowUsages.push(...result.usages);
    // An empty tool response ({} or []) ends the reference's bookkeeping of the node there: its
    // answer values and history rewrite are not kept (a plugin with no outputs saves no answer).
    if (!skipped && !isEmptyToolResponse(result.toolResponses)) {
      if (result.toolResponses !== undefined) toolResponses.push(result.toolResponses);
      if (result.assistantResponses) assistantResponses.push(...result.assistantResponses);
      else {
        const answer = result.answerText ?? result.outputs?.answerText;
        // The switch may be stored as its text ("false") by older exports; unset (or null) means on.
        const responseInput = node.inputs.find((input) => input.key === 'isResponseAnswerText');
        const respond = responseInput?.value == null || formatValueType(responseInput.value, 'boolean') !== false;
        if (typeof answer === 'string' && answer !== '' && respond) {
          assistantResponses.push({ type: 'text', text: { content: answer } });
        }
      }
      if (result.rewriteHistories) histories = result.rewriteHistories;
    }
    if (!skipped) {
      for (const output of node.outputs) {
        const value = result.outputs?.[output.key];
        if (value !== undefined) output.value = value;
      }
    }
    const outgoing = edgeIndex.from(node.nodeId);
    const skipHandles = new Set(skipped ? outgoing.map((e) => e.sourceHandle) : (result.skipHandleIds ?? []));
    const active = new Set<RuntimeNode>();
    const skip = new Set<RuntimeNode>();
    for (const edge of outgoing) {
      if (edge.sourceHandle === SELECTED_TOOLS_HANDLE) continue;
      edge.status = skipHandles.has(edge.sourceHandle) ? 'skipped' : 'active';
      const target = nodeById.get(edge.target);
      if (target) (edge.status === 'active' ? active : skip).add(target);
    }
    return { active: [...active], skip: [...skip].filter((target) => !active.has(target)) };
  };

  const checkNode = async (node: RuntimeNode, skippedIds: Set<string>): Promise<void> => {
    await pause();
    // Checked after the yield: siblings started together must each see what the others spent.
    if (isAborted() || budget.remaining <= 0) return;
    const status = nodeRunStatus(node, edgeIndex, mode !== 'debug');
    let next: { active: RuntimeNode[]; skip: RuntimeNode[] };
    if (status === 'run') {
      let result: NodeRunResult;
      try {
        result = await runNode(node);
      } catch (error) {
        // A node failing once the turn was aborted (its client hung up) was cut by that abort: the
        // run ends here as at a node boundary, keeping what ran, so the turn is saved and billed.
        if (isAborted()) return;
        // The turn fails with this error: nothing else of it starts (branches running beside
        // this one, nested runs included, would otherwise go on after the caller got the error).
        budget.remaining = 0;
        // The nodes that ran before it are billed all the same (failure-usages.ts).
        throw withUsagesBefore(error, flowUsages);
      }
      afterNode(node);
      if (result.interactive) {
        if (!interactiveStop) interactiveStop = { nodeId: node.nodeId, payload: result.interactive };
        return;
      }
      next = propagate(node, result, false);
    } else if (status === 'skip' && !skippedIds.has(node.nodeId)) {
      skippedIds.add(node.nodeId);
      budget.remaining -= 0.1;
      afterNode(node);
      next = propagate(node, {}, true);
    } else return;

    if (mode === 'debug') {
      for (const target of [...next.active, ...next.skip]) debugNextNodes.set(target.nodeId, target);
      return;
    }
    // A node that ran starts a fresh skip record for what it activates (a loop's next pass may
    // skip the same branch again); skipping carries the record on so a skipped cycle ends.
    await Promise.all(next.active.map((target) => checkNode(target, new Set())));
    await Promise.all(next.skip.map((target) => checkNode(target, skippedIds)));
  };

  const entries = nodes.filter((node) => node.isEntry);
  await Promise.all(entries.map((node) => checkNode(node, new Set())));

  // The reference "forces" a pluginOutput node to run once more here, but drops what that run
  // returns: a pluginOutput that was skipped or never reached leaves no response (so a plugin
  // whose output branch was not taken answers no outputs). Nothing to do, then.

  let interactive: WorkflowInteractive | undefined;
  if (interactiveStop) {
    const entryId = interactiveStop.nodeId;
    const stopped: WorkflowInteractive = {
      ...interactiveStop.payload,
      entryNodeIds: [entryId],
      memoryEdges: edges.map((edge) => ({
        ...edge,
        status: edge.target === entryId ? 'active' : edge.source === entryId ? 'waiting' : edge.status,
      })),
      nodeOutputs: nodes.flatMap((node) =>
        node.outputs.filter((output) => Boolean(output.value)).map((output) => ({ nodeId: node.nodeId, key: output.key, value: output.value })),
      ),
    };
    interactive = options.seal ? options.seal(stopped) : stopped;
    emit({ event: 'interactive', interactive });
    assistantResponses.push({ type: 'interactive', interactive });
  }

  return {
    flowResponses,
    flowUsages,
    assistantResponses: mergeAssistantValues(assistantResponses),
    toolResponses,
    newVariables: persistedVariables(variables),
    interactive,
    debugResponse: {
      // Every node, with the outputs of those that ran: the editor keeps this list as its graph
      // and runs the next step's entries from it (as the reference returns its runtime nodes).
      finishedNodes: nodes,
      finishedEdges: edges,
      nextStepRunNodes: [...debugNextNodes.values()],
    },
  };
}
