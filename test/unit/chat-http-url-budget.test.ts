import { describe, expect, it } from 'vitest';
import { buildNodeParams, MAX_INTERPOLATED_GROWTH } from '../../src/domain/workflow/interpolate.js';
import type { NodeRunContext, NodeRunner, RuntimeNode } from '../../src/domain/workflow/types.js';
import { createHttpRunners } from '../../src/platform/chat/workflow-nodes/http-node.js';
import type { HttpCall, NodeDeps } from '../../src/platform/chat/workflow-nodes/node-deps.js';

/**
 * An HTTP node's URL template is filled in once: the growth its variables add is counted against
 * the request's text budget (MAX_INTERPOLATED_GROWTH) once, so a URL naming a large value (a
 * GET query of a big node output) runs when once fits the budget, though twice would not.
 */
describe("an HTTP node's URL naming a large variable", () => {
  it('is sent when one substitution fits the budget, though two would not', async () => {
    const big = 'a'.repeat(Math.floor(MAX_INTERPOLATED_GROWTH * 0.6));
    const calls: HttpCall[] = [];
    const deps = {
      teamId: 't',
      appId: 'a',
      chatId: 'c',
      responseChatItemId: 'r',
      signal: new AbortController().signal,
      customFeedbacks: [],
      httpCall: async (call: HttpCall) => {
        calls.push(call);
        return { status: 200, text: '{"ok":true}' };
      },
    } as unknown as NodeDeps;
    const { httpRequest468 } = createHttpRunners(deps);
    const node: RuntimeNode = {
      nodeId: 'n',
      flowNodeType: 'httpRequest468',
      name: 'Node',
      inputs: [
        { key: 'system_httpMethod', value: 'GET' },
        { key: 'system_httpReqUrl', value: 'http://api.test/x?q={{big}}' },
      ],
      outputs: [],
    } as unknown as RuntimeNode;
    const params = buildNodeParams(node, [node], {});
    const context = { node, params, variables: { big }, histories: [], query: [], runtimeNodes: [node], runtimeEdges: [], mode: 'chat', stream: false, emit: () => undefined, isAborted: () => false, runBudget: { remaining: 10 } };
    const result = (await (httpRequest468 as NodeRunner)(context as unknown as NodeRunContext)) as { outputs: Record<string, unknown> };
    expect(calls).toHaveLength(1);
    expect(calls[0]!.url).toBe(`http://api.test/x?q=${big}`);
    expect(result.outputs.httpRawResponse).toEqual({ ok: true });
  });
});
