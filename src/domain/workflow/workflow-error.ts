/** A workflow that cannot run as stored (unsupported node, bad graph, a text grown too long). */
export class WorkflowError extends Error {
  override name = 'WorkflowError';
}
