/**
 * Node runners that need no I/O. The platform adds the LLM, dataset and HTTP
 * runners on top of these.
 */
import { mergeByRankFusion } from '../rank-fusion.js';
import { valuesFileUrls, valuesText } from './chat-values.js';
import { chooseBranch, type IfElseBranch } from './if-else.js';
import { recordsOf } from './input-shapes.js';
import { dynamicParams, fillNodeText, formatValueType, isReference, nodeLookup, resolveReference, TextBudget } from './interpolate.js';
import { type NodeRunner, type UserSelectOption, VARIABLE_NODE_ID } from './types.js';
import { persistedVariables } from './dispatch.js';

const noop: NodeRunner = async () => ({});

const workflowStart: NodeRunner = async ({ query, params }) => {
  const text = valuesText(query);
  return {
    outputs: { userChatInput: text || (params.userChatInput as string | undefined) || '', userFiles: valuesFileUrls(query) },
    responseData: {},
  };
};

const answerNode: NodeRunner = async ({ params, emit }) => {
  const raw = params.text;
  // Nothing to say (a reference to an output that was never produced) answers an empty line.
  // Text as it is (a backslash-n stays two characters, as the reference sends it: a path or a
  // JSON text must not change on its way to the user).
  const text = typeof raw === 'string' ? raw : raw === undefined ? '' : JSON.stringify(raw, null, 2);
  // The streamed answer starts on a new line; the recorded textOutput is the text itself.
  const answer = `\n${text}`;
  emit({ event: 'fastAnswer', text: answer });
  return { answerText: answer, responseData: { textOutput: text } };
};

const ifElseNode: NodeRunner = async ({ params, node, runtimeNodes, nodeById, variables }) => {
  const branches = normaliseBranches(params.ifElseList, params.condition);
  const nodes = nodeById ?? runtimeNodes;
  const resolve = (variable: unknown) => (isReference(variable) ? resolveReference(variable, nodes, variables) : variable);
  // A condition too costly to check fails with a NodeInputError naming its branch; the dispatcher names the node.
  const result = chooseBranch(branches, resolve);
  const names = [...branches.map((_b, index) => (index === 0 ? 'IF' : `ELSE IF ${index}`)), 'ELSE'];
  return {
    outputs: { ifElseResult: result },
    skipHandleIds: names.filter((name) => name !== result).map((name) => `${node.nodeId}-source-${name}`),
    responseData: { ifElseResult: result },
  };
};

/**
 * The branches of an ifElse node. Before ELSE IF existed (4.8.0 exports), `ifElseList` was one
 * flat list of conditions joined by the node's own `condition` input ("And"/"Or"); that is
 * one IF branch here. AND/OR are read in any letter case.
 */
export function normaliseBranches(list: unknown, legacyCondition: unknown): IfElseBranch[] {
  if (!Array.isArray(list)) return [];
  const joinOf = (value: unknown): 'AND' | 'OR' => (String(value ?? '').toUpperCase() === 'OR' ? 'OR' : 'AND');
  const isFlat = list.length > 0 && list.every((item) => typeof item === 'object' && item !== null && !('list' in item) && 'variable' in item);
  if (isFlat) return [{ condition: joinOf(legacyCondition), list: list as IfElseBranch['list'] }];
  return list.map((branch: IfElseBranch) => ({ ...branch, condition: joinOf(branch?.condition) }));
}

interface UpdateItem {
  variable?: unknown;
  value?: unknown;
  valueType?: string;
  renderType?: 'input' | 'reference';
}

const variableUpdate: NodeRunner = async ({ params, runtimeNodes, nodeById, variables, emit, node }) => {
  const list = recordsOf(params.updateList) as UpdateItem[];
  const nodes = nodeById ?? nodeLookup(runtimeNodes);
  const budget = new TextBudget();
  const results: unknown[] = [];
  for (const item of list) {
    if (!isReference(item.variable)) continue;
    const [targetNodeId, targetKey] = item.variable;
    let value: unknown;
    // A value tuple with a source node id is a reference; ['', literal] (or a bare literal) is typed in.
    if (isReference(item.value) && item.value[0] !== '') value = resolveReference(item.value, nodes, variables);
    else {
      const literal = Array.isArray(item.value) ? item.value[1] : item.value;
      value = formatValueType(literal, item.valueType);
      if (typeof value === 'string') value = fillNodeText(value, nodes, variables, node, budget);
    }
    if (targetNodeId === VARIABLE_NODE_ID) variables[targetKey] = value;
    else {
      const output = nodes.get(targetNodeId)?.outputs.find((o) => o.id === targetKey);
      if (output) output.value = value;
    }
    results.push(value);
  }
  emit({ event: 'updateVariables', variables: persistedVariables(variables) });
  return { responseData: { updateVarResult: results } };
};

const userSelect: NodeRunner = async ({ node, params, query, histories }) => {
  const options = recordsOf(params.userSelectOptions) as unknown as UserSelectOption[];
  const description = typeof params.description === 'string' ? params.description : '';
  const interactive = { type: 'userSelect' as const, params: { description, userSelectOptions: options } };
  if (!node.isEntry) return { interactive };
  // A reply naming no option (typed instead of clicked) skips every option's branch and is the
  // result as typed, as in the reference.
  const chosenText = valuesText(query).trim();
  return {
    outputs: { selectResult: chosenText },
    skipHandleIds: options.filter((o) => o.value !== chosenText).map((o) => `${node.nodeId}-source-${o.key}`),
    rewriteHistories: histories.slice(0, -2),
    responseData: { userSelectResult: chosenText },
  };
};

// An empty response entry, as the reference's plugin input (it is listed among the run's nodes).
const pluginInput: NodeRunner = async ({ params }) => ({ outputs: { ...params }, responseData: {} });

const pluginOutput: NodeRunner = async ({ params }) => ({ responseData: { totalPoints: 0, pluginOutput: params } });

/** A text editor's own input as text, as the reference formats it: JSON (indented, null as `null`), numbers and booleans as written. */
const editorInputText = (value: unknown) => (typeof value === 'object' ? JSON.stringify(value, null, 2) : typeof value === 'boolean' ? String(value) : value);

const textEditor: NodeRunner = async ({ params, variables, node, nodeById, runtimeNodes }) => {
  const dynamic = Object.fromEntries(Object.entries(dynamicParams(node, params)).map(([k, v]) => [k, editorInputText(v)]));
  const text = typeof params.system_textareaInput === 'string' ? params.system_textareaInput : '';
  // Its template is filled here only (interpolate.ts selfTemplated), variables, references and
  // its own inputs in one pass. Global variables win over the node's inputs of the same name, as
  // in the reference; one that is not text or a number (the histories) is left as written.
  const out = fillNodeText(text, nodeById ?? runtimeNodes, variables, node, undefined, Object.assign({}, dynamic, variables));
  return { outputs: { system_text: out }, responseData: { textOutput: out } };
};

interface Quote {
  id: string;
  q?: string;
  a?: string;
  [field: string]: unknown;
}

const datasetConcatNode: NodeRunner = async ({ params, node }) => {
  const limit = Number(params.limit ?? 3000) || 3000;
  const lists = node.inputs
    .filter((input) => input.key !== 'limit')
    .map((input) => params[input.key])
    .filter(Array.isArray)
    .map((list) => recordsOf(list).filter((quote) => typeof quote.id === 'string') as unknown as Quote[]);
  const quoteQA = mergeByRankFusion(lists, limit);
  return { outputs: { quoteQA }, responseData: { limit, quoteList: quoteQA } };
};

/** Runners of the pure node types, keyed by flowNodeType. */
export const pureRunners: Record<string, NodeRunner> = {
  userGuide: noop,
  pluginConfig: noop,
  emptyNode: noop,
  globalVariable: noop,
  workflowStart,
  answerNode,
  ifElseNode,
  variableUpdate,
  userSelect,
  pluginInput,
  pluginOutput,
  textEditor,
  datasetConcatNode,
  // Marks the end of an agent's tool loop (read by the tools node).
  stopTool: async () => ({ responseData: { toolStop: true } }),
};
