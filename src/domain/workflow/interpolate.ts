/**
 * Building a node's params: `{{key}}` from global variables and `{{$nodeId.outputId$}}` from node
 * outputs (one pass), then reference tuples, then value-type formatting.
 */
import { isRecord } from './input-shapes.js';
import { templatePluginInputs } from './system-plugin-ids.js';
import { type FlowNodeInput, type RuntimeNode, VARIABLE_NODE_ID } from './types.js';
import { NodeInputError } from './workflow-error.js';

export type ReferenceTuple = [string, string];

/** A run's nodes by id (the first of a repeated id, as a search of the list finds it). */
export type NodeLookup = ReadonlyMap<string, RuntimeNode>;

/** The nodes by id: the lookup itself, or one built from a list (once per call, never per placeholder). */
export function nodeLookup(nodes: readonly RuntimeNode[] | NodeLookup): NodeLookup {
  if (nodes instanceof Map) return nodes;
  const byId = new Map<string, RuntimeNode>();
  for (const node of nodes as readonly RuntimeNode[]) if (!byId.has(node.nodeId)) byId.set(node.nodeId, node);
  return byId;
}

/** One node by id; a list is searched (building a lookup for a single search costs more). */
function findNode(nodes: readonly RuntimeNode[] | NodeLookup, nodeId: string): RuntimeNode | undefined {
  return nodes instanceof Map ? nodes.get(nodeId) : (nodes as readonly RuntimeNode[]).find((node) => node.nodeId === nodeId);
}

/** Anything that is an array of length 2 whose first element is a string is a reference. */
export function isReference(value: unknown): value is ReferenceTuple {
  return Array.isArray(value) && value.length === 2 && typeof value[0] === 'string' && typeof value[1] === 'string';
}

/**
 * What filling in placeholders may add to a node's inputs, in all, and again to the texts the
 * node fills itself (text editor, variable update, HTTP request). A short text naming a large
 * value many times, or many texts each naming it, would otherwise build strings of hundreds of
 * megabytes.
 */
export const MAX_INTERPOLATED_GROWTH = 1_000_000;

/** Substitution that would add more than MAX_INTERPOLATED_GROWTH characters (the dispatcher names the node). */
export class TextTooLongError extends NodeInputError {
  constructor() {
    super(`filling in its variables would add more than ${MAX_INTERPOLATED_GROWTH} characters to its texts`);
  }
}

/** The characters substitution may still add to a set of texts (a node's inputs, say). */
export class TextBudget {
  private left = MAX_INTERPOLATED_GROWTH;

  /** Takes `added` characters, or fails with TextTooLongError (before the long text is built). */
  spend(added: number): void {
    this.left -= added;
    if (this.left < 0) throw new TextTooLongError();
  }
}

/**
 * Replaces each match of `pattern` (a global regex) by what `valueFor` gives (undefined keeps the
 * match) in one pass over `text`: an inserted value is never scanned again. What the values add
 * beyond their placeholders is taken from `budget` (a budget of its own by default).
 */
export function substitute(text: string, pattern: RegExp, valueFor: (match: RegExpMatchArray) => string | undefined, budget = new TextBudget()): string {
  let out = '';
  let copied = 0;
  for (const match of text.matchAll(pattern)) {
    const value = valueFor(match);
    if (value === undefined) continue;
    budget.spend(value.length - match[0].length);
    const index = match.index ?? 0;
    out += text.slice(copied, index) + value;
    copied = index + match[0].length;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/** `{{key}}`: a key is anything between the braces but braces. */
const VARIABLE_PLACEHOLDER = /\{\{([^{}]+)\}\}/g;

/**
 * `{{key}}` substitution: only string and number values (own keys of `variables`) are inserted,
 * in one pass: a value holding `{{other}}` is inserted as written. (4.8.10 replaces key after key,
 * so such a value was expanded again when `other` came later in the object, and not when it came
 * earlier; expanding it let a 1 KB request build a text of a hundred million characters.)
 */
export function replaceVariables(text: string, variables: Record<string, unknown>, budget?: TextBudget): string {
  if (!text.includes('{{')) return text;
  return substitute(text, VARIABLE_PLACEHOLDER, (match) => variableText(variables, match[1]!), budget);
}

/** What a reference inserts in text: strings and numbers as text and objects (null too: `null`) as JSON; undefined and booleans stay. */
export function referenceText(value: unknown): string | undefined {
  if (value === undefined || typeof value === 'boolean') return undefined;
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return String(value);
  return JSON.stringify(value);
}

/** Resolves a reference tuple to a global variable or a node output (matched by output id). */
export function resolveReference(ref: ReferenceTuple, nodes: readonly RuntimeNode[] | NodeLookup, variables: Record<string, unknown>): unknown {
  const [sourceId, outputId] = ref;
  if (sourceId === VARIABLE_NODE_ID) return variables[outputId];
  return findNode(nodes, sourceId)?.outputs.find((output) => output.id === outputId)?.value;
}

/** A node output named in `{{$nodeId.x$}}`: by output id, else (older exports) by output key. */
function outputValue(node: RuntimeNode | undefined, idOrKey: string): unknown {
  const outputs = node?.outputs ?? [];
  return (outputs.find((output) => output.id === idOrKey) ?? outputs.find((output) => output.key === idOrKey))?.value;
}

/** `{{$nodeId.key$}}` or `{{key}}`: both kinds of placeholder, found in one scan. */
const ANY_PLACEHOLDER = /\{\{\$([^.{}$]+)\.([^{}$]+)\$\}\}|\{\{([^{}]+)\}\}/g;

/** What fills each kind of placeholder (undefined keeps the placeholder as written). */
export interface PlaceholderValues {
  variable(key: string): string | undefined;
  reference(nodeId: string, key: string): string | undefined;
}

/**
 * `{{key}}` and `{{$nodeId.key$}}` filled in one pass over the text as written: a value inserted
 * is never read again as a placeholder. (4.8.10 fills `{{key}}` first and then reads the result
 * for `{{$…$}}`: a caller's variable holding `{{$node.output$}}` named any output of the run, the
 * running node's own inputs too, its HTTP headers included, past a share link's hidden details.)
 */
export function fillPlaceholders(text: string, values: PlaceholderValues, budget?: TextBudget): string {
  if (!text.includes('{{')) return text;
  return substitute(text, ANY_PLACEHOLDER, (match) => (match[3] !== undefined ? values.variable(match[3]) : values.reference(match[1]!, match[2]!)), budget);
}

/** What `{{key}}` inserts of a global variable: own string and number values only. */
export function variableText(variables: Record<string, unknown>, key: string): string | undefined {
  if (!Object.hasOwn(variables, key)) return undefined;
  const value = variables[key];
  return typeof value === 'string' || typeof value === 'number' ? String(value) : undefined;
}

/** What `{{$nodeId.key$}}` names: a global variable, the running node's own input (a reference resolved), or a node's output. */
export function referencedValue(nodes: NodeLookup, variables: Record<string, unknown>, runningNode: RuntimeNode | undefined, nodeId: string, key: string): unknown {
  if (nodeId === VARIABLE_NODE_ID) return variables[key];
  if (runningNode && nodeId === runningNode.nodeId) {
    const input = runningNode.inputs.find((item) => item.key === key);
    return input && isReference(input.value) ? resolveReference(input.value, nodes, variables) : input?.value;
  }
  return outputValue(nodes.get(nodeId), key);
}

/**
 * What a node's placeholders are filled with: `{{key}}` from `scope` (the global variables unless
 * the node adds its own values), `{{$nodeId.key$}}` as `referencedValue` names it.
 */
function nodeTextValues(nodes: readonly RuntimeNode[] | NodeLookup, variables: Record<string, unknown>, runningNode?: RuntimeNode, scope: Record<string, unknown> = variables): PlaceholderValues {
  const byId = nodeLookup(nodes);
  return { variable: (key) => variableText(scope, key), reference: (nodeId, key) => referenceText(referencedValue(byId, variables, runningNode, nodeId, key)) };
}

/** A node's text with its variables and references filled (nodeTextValues), in one pass. */
export function fillNodeText(
  text: string,
  nodes: readonly RuntimeNode[] | NodeLookup,
  variables: Record<string, unknown>,
  runningNode?: RuntimeNode,
  budget?: TextBudget,
  scope: Record<string, unknown> = variables,
): string {
  if (!text.includes('{{')) return text;
  return fillPlaceholders(text, nodeTextValues(nodes, variables, runningNode, scope), budget);
}

/**
 * What a text's placeholders are filled with, keyed as a plain `{{key}}` fill names them
 * (`key`, or `$nodeId.key$` for a reference); placeholders without a value are absent. For a
 * template filled later by a single `{{key}}` pass of its own (the template system plugins): those
 * values go in with its others, and everything is still filled in one pass.
 */
export function placeholderFills(text: string, nodes: readonly RuntimeNode[] | NodeLookup, variables: Record<string, unknown>, runningNode?: RuntimeNode): Record<string, string> {
  const fills: Record<string, string> = {};
  if (!text.includes('{{')) return fills;
  const values = nodeTextValues(nodes, variables, runningNode);
  for (const match of text.matchAll(ANY_PLACEHOLDER)) {
    const value = match[3] !== undefined ? values.variable(match[3]) : values.reference(match[1]!, match[2]!);
    if (value !== undefined) fills[match[3] ?? `$${match[1]}.${match[2]}$`] = value;
  }
  return fills;
}

/**
 * The reference's valueTypeFormat. Only undefined passes untouched: a null is formatted like any
 * value (`"null"` as text, 0 as a number, false as a boolean), as 4.8.10 does.
 */
export function formatValueType(value: unknown, valueType?: string): unknown {
  if (value === undefined) return value;
  if (value === null) return valueType === 'string' ? 'null' : valueType === 'number' ? 0 : valueType === 'boolean' ? false : null;
  switch (valueType) {
    case 'string':
      return typeof value === 'object' ? JSON.stringify(value) : String(value);
    case 'number':
      return Number(value);
    case 'boolean':
      return typeof value === 'string' ? value === 'true' : Boolean(value);
    case 'datasetQuote':
    case 'selectDataset':
      if (Array.isArray(value)) return value;
      if (typeof value === 'string') {
        try {
          return JSON.parse(value) as unknown;
        } catch {
          return [];
        }
      }
      return value;
    default:
      return value;
  }
}

/**
 * Inputs whose templates their node fills itself, with values of its own, in the same one pass
 * as the variables and references: the HTTP node JSON-escapes values in bodies; the text editor
 * and the template plugins add their dynamic inputs. Filled here first, a variable's value
 * holding `{{input}}` would be filled again there.
 */
function selfTemplated(input: FlowNodeInput, node: RuntimeNode): boolean {
  if (input.key === 'system_httpJsonBody' || (node.flowNodeType === 'httpRequest468' && input.key === 'system_httpReqUrl')) return true;
  if (node.flowNodeType === 'textEditor') return input.key === 'system_textareaInput';
  return templatePluginInputs(node).includes(input.key);
}

function inputValue(input: FlowNodeInput, node: RuntimeNode, nodes: NodeLookup, variables: Record<string, unknown>, budget: TextBudget): unknown {
  let value = input.value;
  if (typeof value === 'string' && !selfTemplated(input, node)) value = fillNodeText(value, nodes, variables, node, budget);
  if (isReference(value)) value = resolveReference(value, nodes, variables);
  return formatValueType(value, input.valueType);
}

/**
 * The input holding a node's dynamic inputs (render type `addInputParam`). Editors since 4.8
 * name it `system_addInputParam`; older exports `DYNAMIC_INPUT_KEY`, and some carry both: the
 * first one wins, as in the reference.
 */
export function dynamicInputOf(node: Pick<RuntimeNode, 'inputs'>): FlowNodeInput | undefined {
  return node.inputs.find((input) => input.renderTypeList?.[0] === 'addInputParam') ?? node.inputs.find((input) => input.renderTypeList?.includes('addInputParam'));
}

/** The node's dynamic inputs by key, whatever key its dynamic-input input has. */
export function dynamicParams(node: Pick<RuntimeNode, 'inputs'>, params: Record<string, unknown>): Record<string, unknown> {
  const key = dynamicInputOf(node)?.key;
  const value = key ? params[key] : undefined;
  return isRecord(value) ? value : {};
}

/** Builds a node's params from its inputs. */
export function buildNodeParams(node: RuntimeNode, nodes: readonly RuntimeNode[] | NodeLookup, variables: Record<string, unknown>): Record<string, unknown> {
  const params: Record<string, unknown> = {};
  if (node.flowNodeType === 'pluginInput') {
    for (const input of node.inputs) params[input.key] = formatValueType(input.value, input.valueType);
    return params;
  }
  const byId = nodeLookup(nodes);
  const budget = new TextBudget();
  const dynamicInput = dynamicInputOf(node);
  const dynamic: Record<string, unknown> = {};
  for (const input of node.inputs) {
    if (input === dynamicInput) continue;
    const value = inputValue(input, node, byId, variables, budget);
    params[input.key] = value;
    if (input.canEdit) dynamic[input.key] = value;
  }
  if (dynamicInput) params[dynamicInput.key] = dynamic;
  return params;
}
