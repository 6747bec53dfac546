/** A workflow that cannot run as stored (unsupported node, bad graph, a text grown too long). */
export class WorkflowError extends Error {
  override name = 'WorkflowError';
}

/** What a node's error names it by. */
export interface NodeLabel {
  nodeId: string;
  name?: string;
  flowNodeType: string;
}

/**
 * A node refusing its inputs (a value it lacks, a text grown too long, a condition too costly to
 * check). The code that finds the problem need not know the node: the dispatcher (runNode) fails
 * the turn with `forNode`'s text, so every such answer names its node one way, once (the
 * WorkflowError it throws is no NodeInputError: a run this one is nested in names no node again).
 */
export class NodeInputError extends WorkflowError {
  override name = 'NodeInputError';

  /** `Node 'name' (type): message`. */
  forNode(node: NodeLabel): string {
    return `Node '${node.name ?? node.nodeId}' (${node.flowNodeType}): ${this.message}`;
  }
}

/**
 * A node without a value it needs: the reference's message first (`Input is empty`), then
 * `node 'name' got no value for 'key'`.
 */
export class MissingInputError extends NodeInputError {
  override name = 'MissingInputError';

  constructor(
    readonly problem: string,
    readonly key: string,
  ) {
    super(`${problem}: got no value for '${key}'`);
  }

  override forNode(node: NodeLabel): string {
    return `${this.problem}: node '${node.name ?? node.nodeId}' got no value for '${this.key}'`;
  }
}
