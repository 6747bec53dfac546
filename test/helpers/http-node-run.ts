import { buildNodeParams } from '../../src/domain/workflow/interpolate.js';
import type { NodeRunContext, RuntimeNode } from '../../src/domain/workflow/types.js';
import { createHttpRunners } from '../../src/platform/chat/workflow-nodes/http-node.js';
import type { HttpCall, NodeDeps } from '../../src/platform/chat/workflow-nodes/node-deps.js';

export type HttpNodeResult = { outputs: Record<string, unknown>; responseData: Record<string, unknown> };

/**
 * Runs the real HTTP node runner (httpRequest468) once, outside a workflow: a GET of `url` (a
 * template filled from `variables`), its call answered by `httpCall` in place of the network.
 */
export async function runHttpGet(url: string, httpCall: (call: HttpCall) => Promise<{ status: number; text: string }>, variables: Record<string, unknown> = {}): Promise<HttpNodeResult> {
  const deps = { teamId: 't', appId: 'a', chatId: 'c', responseChatItemId: 'r', signal: new AbortController().signal, customFeedbacks: [], httpCall } as unknown as NodeDeps;
  const node: RuntimeNode = {
    nodeId: 'n',
    flowNodeType: 'httpRequest468',
    name: 'Node',
    inputs: [
      { key: 'system_httpMethod', value: 'GET' },
      { key: 'system_httpReqUrl', value: url },
    ],
    outputs: [],
  } as unknown as RuntimeNode;
  const params = buildNodeParams(node, [node], {});
  const context = { node, params, variables, histories: [], query: [], runtimeNodes: [node], runtimeEdges: [], mode: 'chat', stream: false, emit: () => undefined, isAborted: () => false, runBudget: { remaining: 10 } };
  return (await createHttpRunners(deps).httpRequest468!(context as unknown as NodeRunContext)) as HttpNodeResult;
}
