/** Stored graphs as the runtime reads them. */

/**
 * The nodes with an `inputs` and an `outputs` list each: a graph saved without them (an API
 * client, an older version) runs as nodes without inputs or outputs, never a TypeError. The same
 * array comes back when nothing is missing (the common case costs no copy).
 */
export function withNodeLists<N extends { inputs?: unknown; outputs?: unknown }>(nodes: readonly N[]): (N & { inputs: unknown[]; outputs: unknown[] })[] {
  const complete = (node: N) => Array.isArray(node.inputs) && Array.isArray(node.outputs);
  if (nodes.every(complete)) return nodes as (N & { inputs: unknown[]; outputs: unknown[] })[];
  return nodes.map((node) => (complete(node) ? node : Object.assign({}, node, { inputs: Array.isArray(node.inputs) ? node.inputs : [], outputs: Array.isArray(node.outputs) ? node.outputs : [] }))) as (N & {
    inputs: unknown[];
    outputs: unknown[];
  })[];
}
