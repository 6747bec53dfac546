import { type AddressInfo, connect, type Socket } from 'node:net';
import type { ServerResponse } from 'node:http';
import { ObjectId } from 'mongodb';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { startChatApp } from './chat-helpers.js';

/**
 * A provider that holds its answer open until the caller hangs up, for the tests of a client
 * that hangs up mid-turn. A node whose system prompt is `HOLD` (or a tools round after a tool
 * answered, or a call whose user message holds `[HOLD]`: a classifier's background, an
 * extractor's description) gets PARTIAL streamed, then nothing; `HOLD-USAGE` sends a usage chunk
 * after it; a JSON call (stream false) gets nothing at all. `BREAK` streams PARTIAL and then breaks off (the
 * provider's failure, not a hang-up). Other calls answer "Noted." at once.
 */
export const PARTIAL = 'First half of the answer. ';
export const HELD_USAGE = { prompt_tokens: 3, completion_tokens: 2 };

export interface HangupRig {
  t: TestApp;
  fake: FakeOpenAi;
  port: number;
  /** Held provider calls: started, and those whose connection the service closed. */
  holds: { started: number; closed: number };
  serverSockets: Socket[];
  /** Closes the service (its held connections first) and the fake provider. */
  close(): Promise<void>;
}

export async function startHangupRig(): Promise<HangupRig> {
  const { t, fake } = await startChatApp();
  const holds = { started: 0, closed: 0 };
  const hold = (stream: boolean, usage: boolean) => ({
    stream: async (res: ServerResponse) => {
      holds.started += 1;
      if (stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(`data: ${JSON.stringify({ choices: [{ delta: { content: PARTIAL } }] })}\n\n`);
        if (usage) res.write(`data: ${JSON.stringify({ choices: [], usage: HELD_USAGE })}\n\n`);
      }
      await new Promise((resolve) => res.on('close', resolve));
      holds.closed += 1;
    },
  });
  fake.route('POST', '/v1/chat/completions', (seen) => {
    const body = seen.body as { messages: { role: string; content: unknown }[]; stream?: boolean; tools?: { function: { name: string } }[] };
    const system = body.messages.find((m) => m.role === 'system')?.content;
    const toolAnswered = body.messages.some((m) => m.role === 'tool');
    const firstTool = body.tools?.[0]?.function.name;
    if (firstTool && !toolAnswered) {
      const call = { id: 'call_1', type: 'function', function: { name: firstTool, arguments: '{}' } };
      return { json: { choices: [{ message: { role: 'assistant', content: null, tool_calls: [call] } }], usage: { prompt_tokens: 10, completion_tokens: 5 } } };
    }
    if (system === 'BREAK') {
      return {
        stream: async (res: ServerResponse) => {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          // Broken off once the part was handed to the connection.
          await new Promise((resolve) => res.write(`data: ${JSON.stringify({ choices: [{ delta: { content: PARTIAL } }] })}\n\n`, resolve));
          res.destroy();
        },
      };
    }
    const heldByUser = body.messages.some((m) => m.role === 'user' && typeof m.content === 'string' && m.content.includes('[HOLD]'));
    if (system === 'HOLD' || system === 'HOLD-USAGE' || toolAnswered || heldByUser) return hold(body.stream === true, system === 'HOLD-USAGE');
    return { json: { choices: [{ message: { role: 'assistant', content: 'Noted.' } }], usage: { prompt_tokens: 10, completion_tokens: 5 } } };
  });
  const serverSockets: Socket[] = [];
  t.app.server.on('connection', (socket: Socket) => serverSockets.push(socket));
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const close = async () => {
    for (const socket of serverSockets) socket.destroy();
    await t.close();
    await fake.close();
  };
  return { t, fake, port: (t.app.server.address() as AddressInfo).port, holds, serverSockets, close };
}

/** Polls `probe` until it gives a value; undefined after `ms` (the test then fails on it). */
export async function waitFor<T>(probe: () => T | undefined | Promise<T | undefined>, ms = 10_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined || Date.now() > until) return value as T;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A completion over a real connection, which `hangUp` closes (as a client's Stop button does). */
export async function openCompletion(rig: HangupRig, headers: Record<string, string>, body: Record<string, unknown>) {
  const controller = new AbortController();
  const response = fetch(`http://127.0.0.1:${rig.port}/api/v1/chat/completions`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: controller.signal,
  });
  response.catch(() => undefined);
  /** Reads the stream until `text` arrived, then hangs up. */
  const readUntilThenHangUp = async (text: string): Promise<string> => {
    const reader = (await response).body!.getReader();
    const decoder = new TextDecoder();
    let read = '';
    while (!read.includes(text)) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the stream ended without ${text}: ${read}`);
      read += decoder.decode(value, { stream: true });
    }
    controller.abort();
    return read;
  };
  return { readUntilThenHangUp, hangUp: () => controller.abort() };
}

/** The turn's items once both are saved (question first), or undefined when they never are. */
export async function savedTurn(t: TestApp, appId: string, chatId: string) {
  return waitFor(async () => {
    const items = await t.app.mongo.db.collection('chatitems').find({ appId: new ObjectId(appId), chatId }).sort({ obj: -1 }).toArray();
    return items.length === 2 ? { human: items.find((i) => i.obj === 'Human')!, ai: items.find((i) => i.obj === 'AI')! } : undefined;
  });
}

/** The app's usage records once there are `count`. */
export async function usageRecords(t: TestApp, appId: string, count = 1) {
  return waitFor(async () => {
    const records = await t.app.mongo.db.collection('usages').find({ appId: new ObjectId(appId) }).toArray();
    return records.length >= count ? records : undefined;
  });
}

/**
 * A completion sent over a raw connection, for a hang-up at a known moment: `hangUp` closes it
 * and resolves once the service saw its side close (the turn's abort has fired by then).
 */
export async function rawCompletion(rig: HangupRig, headers: Record<string, string>, body: Record<string, unknown>) {
  const payload = JSON.stringify(body);
  const client = connect(rig.port, '127.0.0.1');
  client.on('data', () => undefined);
  await new Promise((resolve) => client.once('connect', resolve));
  const head = Object.entries({ ...headers, host: '127.0.0.1', 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  client.write(`POST /api/v1/chat/completions HTTP/1.1\r\n${head}\r\n${payload}`);
  const server = await waitFor(() => rig.serverSockets.find((socket) => socket.remotePort === client.localPort));
  return {
    hangUp: async () => {
      // Registered after the server's own close listeners: they ran (and aborted the turn) first.
      const closed = new Promise((resolve) => (server.closed ? resolve(undefined) : server.once('close', resolve)));
      client.destroy();
      await closed;
    },
  };
}

/** A route of the fake that holds each request until `release`: whether it was called, and whether the caller closed its connection first. */
export interface HeldRoute {
  called: boolean;
  /** The caller (this service) closed the connection while the route still held the request. */
  closedByCaller: boolean;
  release(): void;
}

export function holdRoute(fake: FakeOpenAi, method: string, path: string, answer: unknown): HeldRoute {
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => (release = resolve));
  const held: HeldRoute = { called: false, closedByCaller: false, release: () => release() };
  fake.route(method, path, () => ({
    stream: async (res: ServerResponse) => {
      held.called = true;
      let answered = false;
      res.on('close', () => {
        if (!answered) held.closedByCaller = true;
      });
      await released;
      answered = true;
      if (!res.destroyed) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(answer));
      }
    },
  }));
  return held;
}
