import { describe, expect, it } from 'vitest';
import { buildNodeParams } from '../../src/domain/workflow/interpolate.js';
import type { NodeRunContext, NodeRunner, RuntimeNode } from '../../src/domain/workflow/types.js';
import { CallCut, CUT_MESSAGE, untilCut } from '../../src/platform/chat/workflow-nodes/call-cut.js';
import { createCompositeRunners } from '../../src/platform/chat/workflow-nodes/composite-nodes.js';
import { createExtraRunners } from '../../src/platform/chat/workflow-nodes/extra-nodes.js';
import { createHttpRunners } from '../../src/platform/chat/workflow-nodes/http-node.js';
import { createIoRunners } from '../../src/platform/chat/workflow-nodes/io-nodes.js';
import type { NodeDeps } from '../../src/platform/chat/workflow-nodes/node-deps.js';

/**
 * Every outgoing call a node makes ends with its turn: once the client hung up (the turn's abort
 * signal), the node goes on at once, whatever the called service does, records the cut as a
 * failed call, and was handed the signal (so a call that can be cut is: its connection closed).
 */

/** A call that never answers, noting the signal it was handed. */
function heldCall(handed: (AbortSignal | undefined)[]) {
  return (...args: unknown[]) => {
    handed.push(args.find((arg): arg is AbortSignal => arg instanceof AbortSignal) ?? (args[0] as { signal?: AbortSignal } | undefined)?.signal);
    return new Promise<never>(() => undefined);
  };
}

function nodeOf(flowNodeType: string, inputs: RuntimeNode['inputs'], extra: Partial<RuntimeNode> = {}): RuntimeNode {
  return { nodeId: 'n', flowNodeType, name: 'Node', inputs, outputs: [], ...extra };
}

/** Starts `runner` on `node`, aborts the turn once the call was made, and answers what the node did. */
async function runThenHangUp(runner: NodeRunner, node: RuntimeNode, controller: AbortController, called: () => boolean) {
  const params = buildNodeParams(node, [node], {});
  const context = { node, params, variables: {}, histories: [], query: [], runtimeNodes: [node], runtimeEdges: [], mode: 'chat', stream: false, emit: () => undefined, isAborted: () => controller.signal.aborted, runBudget: { remaining: 10 } };
  const running = runner(context as unknown as NodeRunContext).then(
    (result) => ({ result }),
    (error: unknown) => ({ error }),
  );
  while (!called()) await new Promise((resolve) => setImmediate(resolve));
  controller.abort();
  return running;
}

function depsWith(controller: AbortController, handed: (AbortSignal | undefined)[], extra: Partial<NodeDeps> = {}): NodeDeps {
  const held = heldCall(handed);
  return { teamId: 't', appId: 'a', chatId: 'c', responseChatItemId: 'r', signal: controller.signal, customFeedbacks: [], httpCall: held, download: held, runSandbox: held, runSystemPlugin: held, ...extra } as unknown as NodeDeps;
}

describe('untilCut', () => {
  it('answers the call without a signal, rejects with a CallCut at once on abort, and maps a failure after the abort to the cut', async () => {
    expect(await untilCut(undefined, async () => 1)).toBe(1);
    const controller = new AbortController();
    const pending = untilCut(controller.signal, () => new Promise<never>(() => undefined));
    controller.abort();
    await expect(pending).rejects.toBeInstanceOf(CallCut);
    await expect(untilCut(controller.signal, async () => 1)).rejects.toMatchObject({ message: CUT_MESSAGE, name: 'CanceledError', code: 'ERR_CANCELED' });
    const other = new AbortController();
    await expect(untilCut(other.signal, async () => Promise.reject(new Error('refused')))).rejects.toThrow('refused');
  });
});

describe('a hang-up during a node’s outgoing call', () => {
  it('an HTTP node records the cut request, having handed the call the signal', async () => {
    const controller = new AbortController();
    const handed: (AbortSignal | undefined)[] = [];
    const { httpRequest468 } = createHttpRunners(depsWith(controller, handed));
    const node = nodeOf('httpRequest468', [
      { key: 'system_httpMethod', value: 'POST' },
      { key: 'system_httpReqUrl', value: 'http://vendor.test/slow' },
    ]);
    const { result } = (await runThenHangUp(httpRequest468!, node, controller, () => handed.length > 0)) as { result: { outputs: Record<string, unknown>; responseData: Record<string, unknown> } };
    expect(handed).toEqual([controller.signal]);
    expect(result.outputs.error).toMatchObject({ message: CUT_MESSAGE, code: 'ERR_CANCELED', method: 'POST' });
    expect(result.responseData.httpResult).toMatchObject({ error: { code: 'ERR_CANCELED' } });
  });

  it('an HTTP node calling a system plugin by name, and a Laf node, end the same way', async () => {
    const controller = new AbortController();
    const handed: (AbortSignal | undefined)[] = [];
    const { httpRequest468 } = createHttpRunners(depsWith(controller, handed));
    const plugin = nodeOf('httpRequest468', [{ key: 'system_httpReqUrl', value: 'getTime' }]);
    const viaPlugin = (await runThenHangUp(httpRequest468!, plugin, controller, () => handed.length > 0)) as { result: { outputs: Record<string, unknown> } };
    expect(viaPlugin.result.outputs.error).toMatchObject({ code: 'ERR_CANCELED' });

    const lafController = new AbortController();
    const lafHanded: (AbortSignal | undefined)[] = [];
    const { lafModule } = createHttpRunners(depsWith(lafController, lafHanded));
    const laf = nodeOf('lafModule', [{ key: 'system_httpReqUrl', value: 'http://laf.test/fn' }]);
    const { result } = (await runThenHangUp(lafModule!, laf, lafController, () => lafHanded.length > 0)) as { result: { outputs: Record<string, unknown>; responseData: Record<string, unknown> } };
    expect(lafHanded).toEqual([lafController.signal]);
    expect(result.outputs.httpRawResponse).toBe(CUT_MESSAGE);
    expect(result.responseData.httpResult).toEqual({ error: CUT_MESSAGE });
  });

  it('a code node records its sandbox run as cut', async () => {
    const controller = new AbortController();
    const handed: (AbortSignal | undefined)[] = [];
    const { code } = createExtraRunners(depsWith(controller, handed));
    const node = nodeOf('code', [{ key: 'code', value: 'function main() { return {} }' }]);
    const { result } = (await runThenHangUp(code!, node, controller, () => handed.length > 0)) as { result: { outputs: Record<string, unknown> } };
    expect(handed).toEqual([controller.signal]);
    expect(result.outputs.error).toMatchObject({ message: CUT_MESSAGE, code: 'ERR_CANCELED' });
  });

  it('a readFiles node records its file, and each after it, as not read (cut)', async () => {
    const controller = new AbortController();
    const handed: (AbortSignal | undefined)[] = [];
    const { readFiles } = createExtraRunners(depsWith(controller, handed));
    // (Three links: a list of two strings would be read as a reference.)
    const node = nodeOf('readFiles', [{ key: 'fileUrlList', value: ['http://files.test/a.txt', 'http://files.test/b.txt', 'http://files.test/c.txt'] }]);
    const { result } = (await runThenHangUp(readFiles!, node, controller, () => handed.length > 0)) as { result: { responseData: { readFilesResult: string } } };
    // The later files' calls are not made: the cut answers them at once.
    expect(handed).toEqual([controller.signal]);
    expect(result.responseData.readFilesResult).toContain(`File: a.txt\n<Content>\nThe file could not be read: ${CUT_MESSAGE}`);
    expect(result.responseData.readFilesResult).toContain(`File: c.txt\n<Content>\nThe file could not be read: ${CUT_MESSAGE}`);
  });

  it('a dataset search records the cut search and finds nothing', async () => {
    const controller = new AbortController();
    const handed: (AbortSignal | undefined)[] = [];
    const { datasetSearchNode } = createIoRunners(depsWith(controller, handed, { searchDatasets: heldCall(handed) as NodeDeps['searchDatasets'] }));
    const node = nodeOf('datasetSearchNode', [
      { key: 'datasets', value: [{ datasetId: 'd1' }] },
      { key: 'userChatInput', value: 'what is it?' },
    ]);
    const { result } = (await runThenHangUp(datasetSearchNode!, node, controller, () => handed.length > 0)) as { result: { outputs?: unknown; responseData: Record<string, unknown> } };
    expect(result.outputs).toBeUndefined();
    expect(result.responseData).toMatchObject({ query: 'what is it?', error: CUT_MESSAGE });
  });

  it('a system plugin run as a node fails with the cut (the turn, aborted, then ends)', async () => {
    const controller = new AbortController();
    const handed: (AbortSignal | undefined)[] = [];
    const { pluginModule } = createCompositeRunners({ depth: 0, signal: controller.signal, runSystemPlugin: heldCall(handed), loadGraph: () => Promise.reject(new Error('not used')) });
    const node = nodeOf('pluginModule', [], { pluginId: 'community-getTime' });
    const { error } = (await runThenHangUp(pluginModule!, node, controller, () => handed.length > 0)) as { error: unknown };
    expect(error).toBeInstanceOf(CallCut);
  });
});
