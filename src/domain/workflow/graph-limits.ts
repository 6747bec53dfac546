/**
 * How large a workflow graph may be. The editor of the reference never builds graphs near these
 * (its templates have tens of nodes, each with under 30 inputs); a graph sent or stored far
 * beyond them only makes a turn expensive. The apps and chat schemas refuse larger graphs with a
 * 400 naming the field, and the dispatcher checks them again for graphs that did not come
 * through those schemas (stored before the limits, or a paused run's edges sent back by a client).
 */
export const MAX_GRAPH_NODES = 1000;
export const MAX_GRAPH_EDGES = 2000;
/** Inputs, and outputs, of one node. */
export const MAX_NODE_PARTS = 200;

/** Why the graph is too large to run, or undefined when it is within the limits. */
export function graphSizeProblem(nodes: readonly { nodeId: string; inputs: readonly unknown[]; outputs: readonly unknown[] }[], edges: readonly unknown[]): string | undefined {
  if (nodes.length > MAX_GRAPH_NODES) return `The workflow has ${nodes.length} nodes; at most ${MAX_GRAPH_NODES} can run`;
  if (edges.length > MAX_GRAPH_EDGES) return `The workflow has ${edges.length} edges; at most ${MAX_GRAPH_EDGES} can run`;
  for (const node of nodes) {
    const parts = Math.max(node.inputs.length, node.outputs.length);
    if (parts > MAX_NODE_PARTS) return `Node '${node.nodeId}' has ${parts} inputs or outputs; at most ${MAX_NODE_PARTS} can run`;
  }
  return undefined;
}
