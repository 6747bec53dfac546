/**
 * Shapes of the stored workflow graph and of one run, as the reference (FastGPT 4.8.10) names
 * them. Pure types: the dispatcher and the node runners share them.
 */
import type { OutputBudget } from './output-budget.js';

/** The source node id that addresses a global variable in a reference tuple. */
export const VARIABLE_NODE_ID = 'VARIABLE_NODE_ID';
/** Edges attaching tools to an agent node; they never take part in run ordering. */
export const SELECTED_TOOLS_HANDLE = 'selectedTools';

export interface FlowNodeInput {
  key: string;
  renderTypeList?: string[];
  selectedTypeIndex?: number;
  valueType?: string;
  value?: unknown;
  label?: string;
  description?: string;
  required?: boolean;
  toolDescription?: string;
  canEdit?: boolean;
  defaultValue?: unknown;
  [extra: string]: unknown;
}

export interface FlowNodeOutput {
  id: string;
  key: string;
  type?: string;
  valueType?: string;
  value?: unknown;
  label?: string;
  required?: boolean;
  defaultValue?: unknown;
  [extra: string]: unknown;
}

export interface StoreNode {
  nodeId: string;
  flowNodeType: string;
  name?: string;
  avatar?: string;
  intro?: string;
  showStatus?: boolean;
  version?: string;
  position?: { x: number; y: number };
  inputs: FlowNodeInput[];
  outputs: FlowNodeOutput[];
  pluginId?: string;
  [extra: string]: unknown;
}

export interface StoreEdge {
  source: string;
  sourceHandle: string;
  target: string;
  targetHandle: string;
}

export type EdgeStatus = 'waiting' | 'active' | 'skipped';

export interface RuntimeNode extends StoreNode {
  isEntry?: boolean;
}

export interface RuntimeEdge extends StoreEdge {
  status: EdgeStatus;
}

// ---- chat values ----

export interface TextValue {
  type: 'text';
  text: { content: string };
}
export interface FileValue {
  type: 'file';
  file: { type: 'image' | 'file'; name?: string; url: string };
}
export interface ToolValue {
  type: 'tool';
  tools: { id: string; toolName: string; toolAvatar: string; functionName: string; params: string; response: string }[];
}
export interface InteractiveValue {
  type: 'interactive';
  interactive: WorkflowInteractive;
}
export type ChatValue = TextValue | FileValue | ToolValue | InteractiveValue;

export type ChatRole = 'Human' | 'AI' | 'System';

export interface ChatItem {
  dataId?: string;
  obj: ChatRole;
  value: ChatValue[];
  [extra: string]: unknown;
}

export interface UserSelectOption {
  key: string;
  value: string;
}

export interface WorkflowInteractive {
  type: 'userSelect';
  params: { description: string; userSelectOptions: UserSelectOption[]; userSelectedVal?: string };
  entryNodeIds: string[];
  memoryEdges: RuntimeEdge[];
  nodeOutputs: { nodeId: string; key: string; value: unknown }[];
  /** The platform's signature of this state (interactive-seal.ts): a resume from a request needs it. */
  seal?: string;
}

// ---- one run ----

export interface NodeUsage {
  moduleName: string;
  totalPoints: number;
  model?: string;
  tokens?: number;
  /** A model call's prompt and answer tokens (what `tokens` adds up); absent where there is no answer (embeddings). */
  inputTokens?: number;
  outputTokens?: number;
}

/** One element of `responseData` / `flowResponses`. */
export interface NodeResponse {
  id: string;
  nodeId: string;
  moduleName: string;
  moduleType: string;
  runningTime: number;
  [field: string]: unknown;
}

/** Events a run emits; the transport (SSE) decides which ones reach the client. */
export type WorkflowEvent =
  | { event: 'answer' | 'fastAnswer'; text: string }
  | { event: 'flowNodeStatus'; status: 'running'; name: string }
  | { event: 'updateVariables'; variables: Record<string, unknown> }
  | { event: 'interactive'; interactive: WorkflowInteractive }
  | { event: 'toolCall' | 'toolParams' | 'toolResponse'; tool: Record<string, unknown> };

export type RunMode = 'chat' | 'test' | 'debug';

/** What a runner sees. `variables` and the runtime graph may be changed by variableUpdate. */
export interface NodeRunContext {
  node: RuntimeNode;
  params: Record<string, unknown>;
  variables: Record<string, unknown>;
  histories: ChatItem[];
  query: ChatValue[];
  runtimeNodes: RuntimeNode[];
  /** The same nodes by id (set by the dispatcher): a runner looks nodes up here, not by searching the list. */
  nodeById?: ReadonlyMap<string, RuntimeNode>;
  runtimeEdges: RuntimeEdge[];
  mode: RunMode;
  stream: boolean;
  emit: (event: WorkflowEvent) => void;
  isAborted: () => boolean;
  /** The turn's node-run budget, shared with every run nested in it (apps, plugins, tools). */
  runBudget: RunBudget;
  /** The dispatcher's pause between node checks, for the runs nested in this node. */
  pause?: () => Promise<void>;
}

/**
 * What is left of a turn's node runs. One object for the whole turn: a nested run (an app or
 * plugin node, a tool call) spends from it too, so fan-out across nesting levels stays bounded.
 */
export interface RunBudget {
  remaining: number;
  /** What the turn may still produce (output-budget.ts); the outermost dispatch sets it when absent. */
  output?: OutputBudget;
}

export interface NodeRunResult {
  /** Values by output key. */
  outputs?: Record<string, unknown>;
  /** Fields merged into this node's response. Absent: the node adds no response. */
  responseData?: Record<string, unknown>;
  usages?: NodeUsage[];
  /** Explicit assistant values (tools, plugins); otherwise `answerText` is used. */
  assistantResponses?: ChatValue[];
  /** Text stored as the answer of this node (answerNode, chatNode). */
  answerText?: string;
  toolResponses?: unknown;
  /** Source handles that must not fire. */
  skipHandleIds?: string[];
  /** Stop this branch and ask the user. */
  interactive?: Omit<WorkflowInteractive, 'entryNodeIds' | 'memoryEdges' | 'nodeOutputs'>;
  rewriteHistories?: ChatItem[];
}

export type NodeRunner = (context: NodeRunContext) => Promise<NodeRunResult>;

export interface DebugResponse {
  finishedNodes: RuntimeNode[];
  finishedEdges: RuntimeEdge[];
  nextStepRunNodes: RuntimeNode[];
}

export interface DispatchResult {
  flowResponses: NodeResponse[];
  flowUsages: NodeUsage[];
  assistantResponses: ChatValue[];
  toolResponses: unknown[];
  newVariables: Record<string, unknown>;
  debugResponse: DebugResponse;
  /** Set when the run stopped at an interactive node. */
  interactive?: WorkflowInteractive;
}
