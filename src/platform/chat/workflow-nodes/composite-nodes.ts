/**
 * Nodes that run another app's graph: pluginModule (a plugin app as a node) and appModule (a
 * chat app as a node). The child runs a nested dispatch with the same runners; depth is bounded.
 */

import { tokenTotals } from '../../../domain/usage-points.js';
import { selectHistories, valuesText } from '../../../domain/workflow/chat-values.js';
import { MissingInputError, WorkflowError } from '../../../domain/workflow/dispatch.js';
import { dynamicInputOf, dynamicParams, placeholderFills } from '../../../domain/workflow/interpolate.js';
import { isRecord } from '../../../domain/workflow/input-shapes.js';
import { isSystemPluginId, templatePluginInputs } from '../../../domain/workflow/system-plugin-ids.js';
import type { ChatItem, NodeRunContext, NodeRunner, RuntimeEdge, RuntimeNode } from '../../../domain/workflow/types.js';
import { deepClone } from '../../../infra/deep-clone.js';
import type { RunGraph } from '../app-source.js';
import { untilCut } from './call-cut.js';
import { dispatchNested } from './nested-run.js';
import type { SystemPluginRunner } from './node-deps.js';

export const MAX_NESTING = 5;

export interface CompositeDeps {
  /**
   * The child app's runnable graph within the caller's team (throws when missing or foreign), and
   * the runners it runs with (what it may read depends on the child app).
   */
  loadGraph: (appId: string) => Promise<{ graph: RunGraph; type: string; name: string; avatar?: string; runners: Record<string, NodeRunner> }>;
  depth: number;
  /** Runs a built-in system plugin (`community-*`); absent where none are served. */
  runSystemPlugin?: SystemPluginRunner;
  /** Feedback texts of this turn (the customFeedback plugin adds to them). */
  customFeedbacks?: string[];
  /** The turn's abort signal: a system plugin's run ends with it (call-cut.ts). */
  signal?: AbortSignal;
}

function childRuntime(graph: RunGraph, entryTypes: string[], hideStatus: boolean): { nodes: RuntimeNode[]; edges: RuntimeEdge[] } {
  // The deep copy is the run's own: set in place (extending a spread copy is slow, docs/decisions.md#object-spread).
  const nodes = deepClone(graph.nodes) as RuntimeNode[];
  for (const node of nodes) {
    node.isEntry = entryTypes.includes(node.flowNodeType);
    if (hideStatus) node.showStatus = false;
  }
  return { nodes, edges: graph.edges.map((edge) => Object.assign({}, edge, { status: 'waiting' as const })) };
}

export function createCompositeRunners(deps: CompositeDeps): Record<string, NodeRunner> {
  const guard = (context: NodeRunContext) => {
    if (deps.depth >= MAX_NESTING) throw new WorkflowError(`Node '${context.node.name ?? context.node.nodeId}' nests apps deeper than ${MAX_NESTING} levels`);
    if (!context.node.pluginId) throw new WorkflowError(`Node '${context.node.name ?? context.node.nodeId}' has no pluginId`);
    return context.node.pluginId;
  };

  /**
   * A system plugin as a node: its inputs by key (4.8.10 keys are mapped by the registry), the
   * node's dynamic inputs as `customInputs`, its result keys as outputs.
   */
  const systemPlugin = async (context: NodeRunContext, pluginId: string) => {
    const runPlugin = deps.runSystemPlugin;
    if (!runPlugin) throw new WorkflowError(`System plugin ${pluginId} (node '${context.node.name ?? context.node.nodeId}') is not available here`);
    const dynamicKey = dynamicInputOf(context.node)?.key;
    const inputs: Record<string, unknown> = Object.fromEntries(Object.entries(context.params).filter(([key]) => key !== dynamicKey));
    inputs.customInputs ??= dynamicParams(context.node, context.params);
    // A template plugin's template comes unfilled (interpolate.ts selfTemplated): its variables
    // and references go in with its own values, which they win over, for the plugin's one pass.
    for (const key of templatePluginInputs(context.node)) {
      const template = inputs[key];
      if (typeof template !== 'string') continue;
      const fills = placeholderFills(template, context.nodeById ?? context.runtimeNodes, context.variables, context.node);
      inputs.customInputs = { ...(isRecord(inputs.customInputs) ? inputs.customInputs : {}), ...fills };
    }
    // Cut by the turn's hang-up (the plugin's own calls too), the node fails and the turn ends (the run was aborted).
    const output = await untilCut(deps.signal, (signal) => runPlugin(pluginId, inputs, signal));
    if (pluginId === 'community-customFeedback' && typeof output.text === 'string' && output.text) deps.customFeedbacks?.push(output.text);
    return {
      outputs: output,
      responseData: { moduleLogo: context.node.avatar, totalPoints: 0, pluginOutput: output },
      usages: [{ moduleName: context.node.name ?? pluginId, totalPoints: 0 }],
      toolResponses: output,
    };
  };

  const pluginModule: NodeRunner = async (context) => {
    const pluginId = guard(context);
    if (isSystemPluginId(pluginId)) return systemPlugin(context, pluginId);
    const child = await deps.loadGraph(pluginId);
    if (child.type !== 'plugin') throw new WorkflowError(`App ${context.node.pluginId} is not a plugin`);
    const { nodes, edges } = childRuntime(child.graph, ['pluginInput'], true);
    const input = nodes.find((n) => n.flowNodeType === 'pluginInput');
    for (const item of input?.inputs ?? []) if (context.params[item.key] !== undefined) item.value = context.params[item.key];
    // What the plugin answers (its answer or AI nodes) streams and is saved as this node's answer.
    const result = await dispatchNested(context, {
      nodes,
      edges,
      variables: { ...context.variables },
      histories: context.histories,
      query: context.query,
      runners: child.runners,
    });
    const output = result.flowResponses.find((r) => r.moduleType === 'pluginOutput')?.pluginOutput as Record<string, unknown> | undefined;
    const totalPoints = result.flowUsages.reduce((sum, u) => sum + u.totalPoints, 0);
    return {
      outputs: output ?? {},
      assistantResponses: result.assistantResponses,
      // In a test or debug run the editor shows what ran inside the plugin (its output node apart).
      // A plugin whose output node did not run reports no pluginOutput, and an empty tool
      // response (with which the run keeps none of the plugin's answer), as the reference.
      responseData: {
        moduleLogo: child.avatar,
        totalPoints,
        pluginOutput: output,
        pluginDetail: context.mode === 'test' ? result.flowResponses.filter((r) => r.moduleType !== 'pluginOutput') : undefined,
      },
      // The child's model tokens, for a caller's usage report (its own lines are not billed again).
      usages: [{ moduleName: child.name, totalPoints, ...tokenTotals(result.flowUsages) }],
      toolResponses: output ?? {},
    };
  };

  const appModule: NodeRunner = async (context) => {
    const child = await deps.loadGraph(guard(context));
    const question = String(context.params.userChatInput ?? valuesText(context.query));
    if (!question) throw new MissingInputError('Input is empty', 'userChatInput');
    const histories = selectHistories(context.params.history ?? 6, context.histories);
    const { nodes, edges } = childRuntime(child.graph, ['workflowStart', 'userGuide'], false);
    // The node's other inputs are the child app's variables.
    const { userChatInput: _question, history: _history, system_forbid_stream: _stream, ...childVariables } = context.params;
    context.emit({ event: 'answer', text: '\n' });
    const result = await dispatchNested(context, {
      nodes,
      edges,
      variables: { ...context.variables, ...childVariables },
      histories,
      query: [{ type: 'text', text: { content: question } }],
      runners: child.runners,
    });
    const answer = valuesText(result.assistantResponses);
    const history: ChatItem[] = [
      ...histories,
      { obj: 'Human', value: [{ type: 'text', text: { content: question } }] },
      { obj: 'AI', value: result.assistantResponses },
    ];
    const totalPoints = result.flowUsages.reduce((sum, u) => sum + u.totalPoints, 0);
    return {
      outputs: { answerText: answer, history },
      assistantResponses: result.assistantResponses,
      // No detail of the child app's nodes, as 4.8.10: a caller sees what the app answered, not how.
      responseData: { moduleLogo: child.avatar, totalPoints, query: question, textOutput: answer },
      // The child's model tokens, for a caller's usage report (its own lines are not billed again).
      usages: [{ moduleName: child.name, totalPoints, ...tokenTotals(result.flowUsages) }],
      toolResponses: answer,
    };
  };

  /**
   * The abandoned runApp node (`app`), still run by 4.8.10: the chosen app sits in its `app`
   * input ({id}) instead of pluginId; otherwise it is an appModule.
   */
  const runApp: NodeRunner = async (context) => {
    const chosen = context.params.app as { id?: unknown } | undefined;
    if (typeof chosen?.id !== 'string' || !chosen.id) throw new MissingInputError('App not selected', 'app');
    return appModule({ ...context, node: { ...context.node, pluginId: chosen.id } });
  };

  return { pluginModule, appModule, app: runApp };
}
