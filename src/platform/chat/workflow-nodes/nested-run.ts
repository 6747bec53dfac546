import { type DispatchOptions, dispatchWorkflow } from '../../../domain/workflow/dispatch.js';
import type { NodeRunContext } from '../../../domain/workflow/types.js';
import { nanoid } from '../../../infra/random-string.js';

/** What a nested run (an app or plugin node, a tool call) sets itself; the rest is its parent's. */
export type NestedRun = Pick<DispatchOptions, 'nodes' | 'edges' | 'variables' | 'histories' | 'query' | 'runners'> & Partial<Pick<DispatchOptions, 'emit'>>;

/**
 * Runs a graph inside a node's run: with the parent's mode, streaming, abort check, pause and
 * node-run budget (so fan-out across nesting levels stays bounded), and the parent's event sink
 * unless the nested run filters it.
 */
export function dispatchNested(parent: Pick<NodeRunContext, 'mode' | 'stream' | 'emit' | 'isAborted' | 'runBudget' | 'pause'>, run: NestedRun) {
  return dispatchWorkflow({
    mode: parent.mode,
    stream: parent.stream,
    emit: parent.emit,
    isAborted: parent.isAborted,
    runBudget: parent.runBudget,
    pause: parent.pause,
    ...run,
    newId: () => nanoid(),
    now: () => Date.now(),
  });
}
