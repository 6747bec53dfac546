import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VectorModel } from '../../src/domain/models.js';
import { buildNodeParams } from '../../src/domain/workflow/interpolate.js';
import type { NodeRunContext, NodeRunner, RuntimeNode } from '../../src/domain/workflow/types.js';
import { createEmbeddingProvider } from '../../src/infra/embeddings.js';
import { safeFetch } from '../../src/infra/outbound-fetch.js';
import { runSystemPlugin } from '../../src/platform/apps/system-plugins/registry.js';
import { createSelfCaller } from '../../src/platform/chat/self-call.js';
import { createCompositeRunners } from '../../src/platform/chat/workflow-nodes/composite-nodes.js';
import { createHttpRunners } from '../../src/platform/chat/workflow-nodes/http-node.js';
import { createIoRunners } from '../../src/platform/chat/workflow-nodes/io-nodes.js';
import type { NodeDeps } from '../../src/platform/chat/workflow-nodes/node-deps.js';
import type { DatasetsContext } from '../../src/platform/datasets/context.js';
import { createSearchService } from '../../src/platform/datasets/search/search.service.js';

/**
 * The calls a node makes that went on after its turn's client hung up (a system plugin's own
 * download, the dataset search's query embedding, an injected call to this service's own routes)
 * are handed the turn's abort signal and end with it: the service they call sees its request
 * closed before it answered. (The node itself goes on at once: workflow-node-cuts.test.ts.)
 */

/** A local endpoint (a web page, an embedding provider) that answers only when the test ends, noting whether the caller closed each request first. */
interface HeldEndpoint {
  origin: string;
  requests: { path: string; closedBeforeAnswer: boolean }[];
  close(): Promise<void>;
}

async function startHeldEndpoint(): Promise<HeldEndpoint> {
  const requests: HeldEndpoint['requests'] = [];
  const open = new Set<ServerResponse>();
  const server = createServer((request, response) => {
    const seen = { path: request.url ?? '', closedBeforeAnswer: false };
    requests.push(seen);
    open.add(response);
    response.on('close', () => {
      open.delete(response);
      if (!response.writableEnded) seen.closedBeforeAnswer = true;
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: async () => {
      for (const response of open) response.end('{}');
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Polls `probe` until it holds; false after a few seconds (the test then fails on it). */
async function eventually(probe: () => boolean, ms = 5_000): Promise<boolean> {
  const until = Date.now() + ms;
  while (!probe()) {
    if (Date.now() > until) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return true;
}

/** How `promise` settled: its value or its error (it is awaited only once the test looked at the endpoint). */
function settled<T>(promise: Promise<T>) {
  return promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
}

let endpoint: HeldEndpoint;

beforeAll(async () => {
  endpoint = await startHeldEndpoint();
});

afterAll(async () => {
  await endpoint?.close();
});

describe('a hang-up cuts the calls a node makes through other modules', () => {
  it("the fetchUrl system plugin's download: its request is closed, the run rejects", async () => {
    const controller = new AbortController();
    const running = settled(runSystemPlugin('fetchUrl', { url: `${endpoint.origin}/page` }, { fetchOptions: { allowPrivate: true }, signal: controller.signal }));
    expect(await eventually(() => endpoint.requests.some((request) => request.path === '/page'))).toBe(true);
    controller.abort();
    expect(await eventually(() => endpoint.requests.find((request) => request.path === '/page')!.closedBeforeAnswer)).toBe(true);
    expect(await running).toMatchObject({ error: { name: 'AbortError' } });
  });

  it("the dataset search's query embedding: its request to the provider is closed, the search rejects", async () => {
    const model: VectorModel = { model: 'held-embedding', name: 'Held embedding', defaultToken: 512, maxToken: 3000, provider: 'openai' };
    const provider = createEmbeddingProvider(model, { baseUrl: `${endpoint.origin}/v1`, timeoutMs: 30_000 });
    const ctx = {
      embedders: () => ({ forModel: () => ({ model, embed: provider.embed }) }),
      searchIndex: { prepare: async () => [], collectionInfo: async () => new Map() },
      models: { getVectorModel: () => model, getReRankModel: () => undefined, catalog: { reRankModels: [] } },
      config: {},
      log: { warn: () => undefined },
    } as unknown as DatasetsContext;
    const controller = new AbortController();
    const search = { teamId: 't', datasetIds: ['d'], vectorModel: model.model, queries: ['where?'], limit: 1000, similarity: 0, searchMode: 'embedding' as const, usingReRank: false };
    const running = settled(createSearchService(ctx).searchPriced({ ...search, signal: controller.signal }));
    expect(await eventually(() => endpoint.requests.some((request) => request.path === '/v1/embeddings'))).toBe(true);
    controller.abort();
    expect(await eventually(() => endpoint.requests.find((request) => request.path === '/v1/embeddings')!.closedBeforeAnswer)).toBe(true);
    expect(await running).toHaveProperty('error');
  });

  it("an injected call to this service's own route: the route sees its request closed, the caller rejects at once", async () => {
    const app = Fastify();
    app.decorate('config', { TOKEN_KEY: 'self-call-test-key' } as never);
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    const route = { called: false, closedBeforeAnswer: false };
    app.get('/held', async (request) => {
      route.called = true;
      let answered = false;
      request.raw.once('close', () => {
        if (!answered) route.closedBeforeAnswer = true;
      });
      await released;
      answered = true;
      return { late: true };
    });
    await app.ready();
    try {
      const callSelf = createSelfCaller(app, safeFetch);
      const controller = new AbortController();
      const running = settled(callSelf('/held', { method: 'GET', timeoutMs: 30_000, signal: controller.signal }, { teamId: 't', appId: 'a', chatId: 'c', dataId: 'd' }));
      expect(await eventually(() => route.called)).toBe(true);
      controller.abort();
      expect(await eventually(() => route.closedBeforeAnswer)).toBe(true);
      // The route still holds its answer: the caller did not wait for it.
      expect(await running).toMatchObject({ error: { name: 'AbortError' } });
    } finally {
      release();
      await app.close();
    }
  });
});

function nodeOf(flowNodeType: string, inputs: RuntimeNode['inputs'], extra: Partial<RuntimeNode> = {}): RuntimeNode {
  return { nodeId: 'n', flowNodeType, name: 'Node', inputs, outputs: [], ...extra };
}

/** Runs `runner` on `node` until it made its call; answers the arguments the call was made with. */
async function callArguments(runner: NodeRunner, node: RuntimeNode, made: unknown[][]): Promise<unknown[]> {
  const params = buildNodeParams(node, [node], {});
  const context = { node, params, variables: {}, histories: [], query: [], runtimeNodes: [node], runtimeEdges: [], mode: 'chat', stream: false, emit: () => undefined, isAborted: () => false, runBudget: { remaining: 10 } };
  void runner(context as unknown as NodeRunContext).catch(() => undefined);
  expect(await eventually(() => made.length > 0)).toBe(true);
  return made[0]!;
}

/** A call that never answers, noting its arguments. */
const heldCall = (made: unknown[][]) => (...args: unknown[]) => {
  made.push(args);
  return new Promise<never>(() => undefined);
};

describe('the node runners hand the turn’s signal on', () => {
  const turn = new AbortController();
  const depsWith = (extra: Partial<NodeDeps>) => ({ teamId: 't', appId: 'a', chatId: 'c', responseChatItemId: 'r', signal: turn.signal, customFeedbacks: [], ...extra }) as unknown as NodeDeps;

  it('an HTTP node naming a system plugin, to the plugin run', async () => {
    const made: unknown[][] = [];
    const { httpRequest468 } = createHttpRunners(depsWith({ runSystemPlugin: heldCall(made), httpCall: heldCall([]) }));
    const [name, , signal] = await callArguments(httpRequest468!, nodeOf('httpRequest468', [{ key: 'system_httpReqUrl', value: 'fetchUrl' }]), made);
    expect(name).toBe('fetchUrl');
    expect(signal).toBe(turn.signal);
  });

  it('a system plugin run as a node, to the plugin run', async () => {
    const made: unknown[][] = [];
    const { pluginModule } = createCompositeRunners({ depth: 0, signal: turn.signal, runSystemPlugin: heldCall(made), loadGraph: () => Promise.reject(new Error('not used')) });
    const [, , signal] = await callArguments(pluginModule!, nodeOf('pluginModule', [], { pluginId: 'community-fetchUrl' }), made);
    expect(signal).toBe(turn.signal);
  });

  it('a dataset search node, with its search request', async () => {
    const made: unknown[][] = [];
    const { datasetSearchNode } = createIoRunners(depsWith({ searchDatasets: heldCall(made) as NodeDeps['searchDatasets'] }));
    const node = nodeOf('datasetSearchNode', [
      { key: 'datasets', value: [{ datasetId: 'd1' }] },
      { key: 'userChatInput', value: 'what is it?' },
    ]);
    const [request] = await callArguments(datasetSearchNode!, node, made);
    expect(request).toMatchObject({ datasetIds: ['d1'], queries: ['what is it?'], signal: turn.signal });
  });
});
