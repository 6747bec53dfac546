import { mkdtempSync, writeFileSync } from 'node:fs';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakeModelConfig } from '../helpers/fake-openai.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { ok } from './apps-helpers.js';
import { type HangupRig, holdRoute, rawCompletion, savedTurn, waitFor } from './chat-hangup-helpers.js';
import { createPublishedApp, startChatApp } from './chat-helpers.js';

/**
 * A hang-up while a node waits on a call made through another module: a system plugin's own
 * download (fetchUrl, by an HTTP node naming it and as a plugin node) and a dataset search's
 * query embedding (a remote vector model). The called service sees its connection closed while
 * it still holds the answer, and the turn is saved with what ran.
 */
let rig: HangupRig;
let token: string;

const start = { nodeId: 'start', flowNodeType: 'workflowStart', name: 'Start', inputs: [], outputs: [{ id: 'userChatInput', key: 'userChatInput', valueType: 'string' }] };
const edge = (source: string, target: string) => ({ source, sourceHandle: `${source}-source-right`, target, targetHandle: `${target}-target-left` });

beforeAll(async () => {
  const { t, fake } = await startChatApp((fake) => {
    const dir = mkdtempSync(join(tmpdir(), 'hangup-search-'));
    const heldEmbedding = { model: 'held-embedding', name: 'Held embedding', defaultToken: 512, maxToken: 3000, requestUrl: fake.baseUrl };
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...fakeModelConfig(fake.baseUrl), vectorModels: [heldEmbedding] }));
    // Far past waitFor's 10 s: a call that is not cut stays open until the test ends.
    return { MODEL_CONFIG_PATH: join(dir, 'config.json'), OUTBOUND_TIMEOUT_MS: '120000' };
  });
  const serverSockets: Socket[] = [];
  t.app.server.on('connection', (socket: Socket) => serverSockets.push(socket));
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const close = async () => {
    for (const socket of serverSockets) socket.destroy();
    await t.close();
    await fake.close();
  };
  rig = { t, fake, port: (t.app.server.address() as AddressInfo).port, holds: { started: 0, closed: 0 }, serverSockets, close };
  await createUser(t, { username: 'hangup-plugins', password: 'password-hp1' });
  token = await login(t, 'hangup-plugins', 'password-hp1');
}, 60_000);

afterAll(async () => {
  await rig?.close();
});

/** Runs `graph`, hangs up once `held` was called, and checks the called service saw its connection closed. */
async function hangUpDuring(held: ReturnType<typeof holdRoute>, name: string, graph: Parameters<typeof createPublishedApp>[3], chatId: string) {
  const appId = await createPublishedApp(rig.t, token, name, graph);
  const turn = await rawCompletion(rig, authHeaders(token), { appId, chatId, stream: true, detail: true, messages: [{ role: 'user', content: 'go' }] });
  expect(await waitFor(() => (held.called ? true : undefined))).toBe(true);
  await turn.hangUp();
  expect(await savedTurn(rig.t, appId, chatId)).toBeDefined();
  expect(await waitFor(() => (held.closedByCaller ? true : undefined))).toBe(true);
}

describe('a client that hangs up while a node waits on another module', () => {
  it("an HTTP node naming the fetchUrl plugin: the plugin's download is cut", async () => {
    const held = holdRoute(rig.fake, 'GET', '/held-page', 'never read');
    try {
      const http = {
        nodeId: 'http',
        flowNodeType: 'httpRequest468',
        name: 'Fetch',
        inputs: [
          { key: 'system_httpMethod', value: 'POST' },
          { key: 'system_httpReqUrl', value: 'fetchUrl' },
          { key: 'system_httpJsonBody', value: JSON.stringify({ url: `${rig.fake.origin}/held-page` }) },
        ],
        outputs: [{ id: 'httpRawResponse', key: 'httpRawResponse', valueType: 'any' }],
      };
      await hangUpDuring(held, 'Hang-up fetchUrl', { nodes: [start, http], edges: [edge('start', 'http')], chatConfig: {} }, 'fetch-url');
    } finally {
      held.release();
      rig.fake.unroute('GET', '/held-page');
    }
  });

  it('the fetchUrl plugin as a node: its download is cut', async () => {
    const held = holdRoute(rig.fake, 'GET', '/held-plugin-page', 'never read');
    try {
      const plugin = { nodeId: 'plugin', flowNodeType: 'pluginModule', name: 'Fetch', pluginId: 'community-fetchUrl', inputs: [{ key: 'url', value: `${rig.fake.origin}/held-plugin-page` }], outputs: [] };
      await hangUpDuring(held, 'Hang-up plugin', { nodes: [start, plugin], edges: [edge('start', 'plugin')], chatConfig: {} }, 'plugin-node');
    } finally {
      held.release();
      rig.fake.unroute('GET', '/held-plugin-page');
    }
  });

  it("a dataset search: the query embedding's request to the provider is cut", async () => {
    const held = holdRoute(rig.fake, 'POST', '/v1/embeddings', { data: [] });
    try {
      const datasetId = await ok(rig.t, token, 'POST', '/core/dataset/create', { name: 'Held', vectorModel: 'held-embedding' });
      const search = {
        nodeId: 'search',
        flowNodeType: 'datasetSearchNode',
        name: 'Search',
        inputs: [
          { key: 'datasets', value: [{ datasetId }] },
          { key: 'userChatInput', value: ['start', 'userChatInput'] },
          { key: 'searchMode', value: 'embedding' },
        ],
        outputs: [{ id: 'quoteQA', key: 'quoteQA', valueType: 'datasetQuote' }],
      };
      await hangUpDuring(held, 'Hang-up search', { nodes: [start, search], edges: [edge('start', 'search')], chatConfig: {} }, 'search');
    } finally {
      held.release();
      rig.fake.unroute('POST', '/v1/embeddings');
    }
  });
});
