import type { AddressInfo, Socket } from 'node:net';
import { connect } from 'node:net';
import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { createPublishedApp, sseFrames, startChatApp } from './chat-helpers.js';

/**
 * What one turn sends, and to whom. A loop multiplied a node's output (a 0.9 MB chatTest answered
 * 179 MB), and answers were written whatever the client took: five clients that never read held
 * 1.8 GB of the server's memory, for as long as they kept their connections open.
 */
let t: TestApp;
let fake: FakeOpenAi;
let token: string;
let port: number;
let loopAppId: string;
const serverSockets: Socket[] = [];
const clients: Socket[] = [];
const MESSAGES = [{ role: 'user', content: 'go' }];

const start = { nodeId: 'start', flowNodeType: 'workflowStart', name: 'Start', inputs: [], outputs: [{ id: 'userChatInput', key: 'userChatInput', valueType: 'string' }] };
const edge = (source: string, target: string) => ({ source, sourceHandle: `${source}-source-right`, target, targetHandle: `${target}-target-left` });
const textEditor = (nodeId: string, text: string, extra: Record<string, unknown>[] = []) => ({
  nodeId,
  flowNodeType: 'textEditor',
  name: nodeId,
  inputs: [{ key: 'system_addInputParam', renderTypeList: ['addInputParam'], value: {} }, ...extra, { key: 'system_textareaInput', value: text }],
  outputs: [{ id: 'system_text', key: 'system_text', valueType: 'string' }],
});
const answer = (nodeId: string, text: string) => ({ nodeId, flowNodeType: 'answerNode', name: nodeId, inputs: [{ key: 'text', value: text }], outputs: [] });

/** The audit's graph: start → A → B → A, A a 900,000-character text, B repeating it. */
const multiplying = {
  nodes: [start, textEditor('A', 'x'.repeat(900_000)), textEditor('B', '{{y}}', [{ key: 'y', canEdit: true, value: ['A', 'system_text'], valueType: 'string' }])],
  edges: [edge('start', 'A'), edge('A', 'B'), edge('B', 'A')],
};
/** start → A ⇄ B, each answering 40,000 characters: 199 node runs stream 8 MB, within the output budget. */
const ANSWER_CHARS = 40_000;
const talkative = {
  nodes: [start, answer('A', 'a'.repeat(ANSWER_CHARS)), answer('B', 'b'.repeat(ANSWER_CHARS))],
  edges: [edge('start', 'A'), edge('A', 'B'), edge('B', 'A')],
  chatConfig: {},
};

/** Sends a completion request over a raw connection and never reads the answer. */
async function requestNeverRead(body: Record<string, unknown>): Promise<{ client: Socket; server: Socket }> {
  const payload = JSON.stringify(body);
  const client = connect(port, '127.0.0.1');
  clients.push(client);
  client.pause();
  await new Promise((resolve) => client.once('connect', resolve));
  client.write(
    `POST /api/v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ntoken: ${token}\r\ncontent-length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`,
  );
  const server = await waitFor(() => serverSockets.find((socket) => socket.remotePort === client.localPort));
  return { client, server };
}

/** Polls `probe` until it gives a value; undefined after `ms` (the test then fails on it). */
async function waitFor<T>(probe: () => T | undefined | Promise<T | undefined>, ms = 10_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined || Date.now() > until) return value as T;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const closed = (socket: Socket) => waitFor(() => (socket.destroyed ? true : undefined));

beforeAll(async () => {
  ({ t, fake } = await startChatApp(() => ({ RESPONSE_STALL_TIMEOUT_MS: '300' })));
  await createUser(t, { username: 'output-bounds', password: 'password-o1' });
  token = await login(t, 'output-bounds', 'password-o1');
  loopAppId = await createPublishedApp(t, token, 'Talkative', talkative);
  t.app.server.on('connection', (socket: Socket) => serverSockets.push(socket));
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  port = (t.app.server.address() as AddressInfo).port;
}, 60_000);

afterAll(async () => {
  for (const socket of [...clients, ...serverSockets]) socket.destroy();
  await t?.close();
  await fake?.close();
});

describe('a turn that multiplies its output', () => {
  it('chatTest: the turn ends with a 400 error frame naming the node, not a 179 MB answer', async () => {
    const response = await t.app.inject({ method: 'POST', url: '/api/core/chat/chatTest', headers: authHeaders(token), payload: { appId: loopAppId, ...multiplying, chatConfig: {}, messages: MESSAGES } });
    expect(response.statusCode).toBe(400);
    expect(response.body.length).toBeLessThan(10_000);
    const [frame] = sseFrames(response.body);
    expect(frame?.event).toBe('error');
    expect(JSON.parse(frame!.data).message).toMatch(/^Node '[AB]' \(textEditor\): the turn produced more than 20000000 characters of answers and run details/);
  }, 60_000);

  it('a JSON completion is a 400', async () => {
    const appId = await createPublishedApp(t, token, 'Multiplying', { ...multiplying, chatConfig: {} });
    const response = await t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: authHeaders(token), payload: { appId, detail: true, messages: MESSAGES } });
    expect(response.statusCode).toBe(400);
    expect(response.json().message).toMatch(/the turn produced more than 20000000 characters/);
  }, 60_000);
});

describe('a client that stops reading', () => {
  it('a streamed answer: the turn waits for it, then its connection is closed and the turn ends', async () => {
    const { server } = await requestNeverRead({ appId: loopAppId, chatId: 'stalled-stream', stream: true, messages: MESSAGES });
    expect(await closed(server)).toBe(true);
    // The turn ended there (an ended turn is saved).
    const saved = await waitFor(() => t.app.mongo.db.collection('chatitems').findOne({ appId: new ObjectId(loopAppId), chatId: 'stalled-stream', obj: 'AI' }).then((item) => item ?? undefined));
    expect(saved).toBeDefined();
    // A reading client's turn runs 200 nodes; this one stopped once the socket buffers (a few MB) were full.
    expect((saved!.responseData as unknown[]).length).toBeLessThan(180);
  }, 30_000);

  it('a client that reads gets the whole streamed answer', async () => {
    const response = await fetch(`http://127.0.0.1:${port}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { ...authHeaders(token), 'content-type': 'application/json' },
      body: JSON.stringify({ appId: loopAppId, stream: true, messages: MESSAGES }),
    });
    const text = (await response.text()).length;
    expect(response.status).toBe(200);
    // 199 node runs of 40,000 characters, in OpenAI chunks.
    expect(text).toBeGreaterThan(199 * ANSWER_CHARS);
  }, 30_000);

  it('a JSON answer: its connection is closed once nothing moves', async () => {
    const { server } = await requestNeverRead({ appId: loopAppId, stream: false, messages: MESSAGES });
    expect(await closed(server)).toBe(true);
  }, 30_000);
});
