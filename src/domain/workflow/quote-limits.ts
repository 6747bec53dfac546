/**
 * Saving a workflow (the reference's beforeUpdateAppFormat): a dataset search node's quote budget
 * (`limit`, in tokens) is lowered to what the graph's chat and tools models take as quotes (the
 * largest `quoteMaxToken` among them, never under 3000), so the editor shows, and the search
 * fetches, no more than a model of the graph can use.
 */

const MIN_QUOTE_LIMIT = 3000;
const QUOTING_NODE_TYPES = new Set(['chatNode', 'tools']);

interface NodeInput {
  key?: unknown;
  value?: unknown;
}

interface WorkflowNode {
  flowNodeType?: unknown;
  inputs?: unknown;
}

/** A node's inputs; anything but an object in the list (a damaged stored graph) is left out. */
const inputsOf = (node: WorkflowNode): NodeInput[] =>
  Array.isArray(node.inputs) ? (node.inputs as unknown[]).filter((input): input is NodeInput => typeof input === 'object' && input !== null) : [];

/**
 * The nodes with every dataset search `limit` above the graph's quote budget lowered to it; other
 * nodes and inputs are returned as they are. `quoteMaxTokenOf` answers a model's budget (the
 * default model's for an unknown or missing one; undefined when none is configured).
 */
export function clampDatasetSearchLimits<N extends WorkflowNode>(nodes: N[], quoteMaxTokenOf: (model: unknown) => number | undefined): N[] {
  let budget = MIN_QUOTE_LIMIT;
  for (const node of nodes) {
    if (!QUOTING_NODE_TYPES.has(String(node.flowNodeType))) continue;
    const model = inputsOf(node).find((input) => input.key === 'model')?.value;
    budget = Math.max(budget, quoteMaxTokenOf(model) || MIN_QUOTE_LIMIT);
  }
  return nodes.map((node) => {
    if (node.flowNodeType !== 'datasetSearchNode') return node;
    const inputs = inputsOf(node);
    if (!inputs.some((input) => input.key === 'limit' && Number(input.value) > budget)) return node;
    return { ...node, inputs: inputs.map((input) => (input.key === 'limit' && Number(input.value) > budget ? { ...input, value: budget } : input)) };
  });
}
