import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildReplica, type TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { createUser, login } from '../helpers/platform.js';
import { ok } from './apps-helpers.js';
import { createPublishedApp, simpleChatGraph, startChatApp } from './chat-helpers.js';

let t: TestApp;
let fake: FakeOpenAi;
let tok: string;
let appId: string;

/** Longer than the fixed 5 s a close used to wait, well within the 8 s a 10 s shutdown bound leaves. */
const SLOW_ANSWER_MS = 6_500;

const feishuHeaders = { 'content-type': 'application/json; charset=utf-8' };
const feishuEvent = (eventId: string, messageId: string, text: string) => ({
  schema: '2.0',
  header: { event_id: eventId, event_type: 'im.message.receive_v1', create_time: '1700000000000', token: 'vt', app_id: 'cli_s', tenant_key: 'tk' },
  event: {
    sender: { sender_id: { open_id: `ou_${messageId}` }, sender_type: 'user', tenant_key: 'tk' },
    message: { message_id: messageId, chat_id: `oc_${messageId}`, chat_type: 'p2p', message_type: 'text', create_time: '1700000000000', content: JSON.stringify({ text }) },
  },
});
const replyPath = (messageId: string) => `/feishu/open-apis/im/v1/messages/${messageId}/reply`;

/** A process of the deployment that is stopped (rolling deploy) while the primary keeps running. */
const replicaOf = (beforeReady?: Parameters<typeof buildReplica>[2]) =>
  buildReplica(t, { MODEL_CONFIG_PATH: t.config.MODEL_CONFIG_PATH as string, SSRF_ALLOW_PRIVATE: 'true', SHUTDOWN_TIMEOUT_MS: '10000' }, beforeReady);

beforeAll(async () => {
  ({ t, fake } = await startChatApp());
  await createUser(t, { username: 'shutdown-owner', password: 'password-s1' });
  tok = await login(t, 'shutdown-owner', 'password-s1');
  appId = await createPublishedApp(t, tok, 'Channel bot', simpleChatGraph);
  fake.route('POST', '/feishu/open-apis/auth/v3/tenant_access_token/internal', () => ({ json: { code: 0, tenant_access_token: 't-feishu' } }));
  for (const id of ['om_slow', 'om_closing']) fake.route('POST', replyPath(id), () => ({ json: { code: 0 } }));
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

const createFeishuLink = () =>
  ok(t, tok, 'POST', '/support/outLink/create', { appId, type: 'feishu', name: 'feishu', app: { appId: 'cli_s', appSecret: 'sec', verificationToken: 'vt', apiBaseUrl: `${fake.origin}/feishu` } }) as Promise<string>;

describe('a process closing with channel turns', () => {
  it('a turn whose model answers after more than 5 s is completed, saved and sent before the close ends', async () => {
    const token = await createFeishuLink();
    let modelAsked!: () => void;
    const asked = new Promise<void>((resolve) => {
      modelAsked = resolve;
    });
    fake.route('POST', '/v1/chat/completions', async () => {
      modelAsked();
      await new Promise((resolve) => setTimeout(resolve, SLOW_ANSWER_MS));
      return { json: { choices: [{ message: { role: 'assistant', content: 'A considered answer' } }], usage: { prompt_tokens: 10, completion_tokens: 5 } } };
    });
    try {
      const replica = await replicaOf();
      const payload = JSON.stringify(feishuEvent('ev-slow', 'om_slow', 'think hard'));
      expect((await replica.app.inject({ method: 'POST', url: `/api/support/outLink/feishu/${token}`, headers: feishuHeaders, payload })).statusCode).toBe(200);
      await asked;
      await replica.close();

      const reply = fake.requests.find((r) => r.path === replyPath('om_slow'));
      expect(reply?.body).toEqual({ msg_type: 'text', content: JSON.stringify({ text: 'A considered answer' }) });
      const answer = await t.app.mongo.db.collection('chatitems').findOne({ chatId: { $regex: 'oc_om_slow$' }, obj: 'AI' });
      expect(JSON.stringify(answer?.value)).toContain('A considered answer');
    } finally {
      fake.unroute('POST', '/v1/chat/completions');
    }
  }, 30_000);

  it('an event reaching a handler once the close began is refused (503) unclaimed, so its redelivery elsewhere is answered', async () => {
    const token = await createFeishuLink();
    const url = `/api/support/outLink/feishu/${token}`;
    let requestIn!: () => void;
    const arrived = new Promise<void>((resolve) => {
      requestIn = resolve;
    });
    const replica = await replicaOf((app) => {
      app.addHook('onRequest', async (request) => {
        if (request.url.startsWith('/api/support/outLink/')) requestIn();
      });
    });
    await replica.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = replica.app.server.address() as AddressInfo;

    // The event's headers arrive before the close, its body after: the handler runs during the close.
    const body = JSON.stringify(feishuEvent('ev-closing', 'om_closing', 'during the deploy'));
    let closed: Promise<void> | undefined;
    const answer = new Promise<{ status: number; text: string }>((resolve, reject) => {
      const call = httpRequest({ host: '127.0.0.1', port, method: 'POST', path: url, headers: { ...feishuHeaders, 'content-length': Buffer.byteLength(body) } }, (res) => {
        let text = '';
        res.on('data', (chunk) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      });
      call.on('error', reject);
      call.write(body.slice(0, 10));
      arrived.then(() => {
        closed = replica.close();
        // Once the server stops listening, the close's preClose hooks have run.
        const sendRest = () => (replica.app.server.listening ? setTimeout(sendRest, 5) : call.end(body.slice(10)));
        sendRest();
      }, reject);
    });
    const refused = await answer;
    expect(refused.status, refused.text).toBe(503);
    await closed;
    const linkId = (await t.app.mongo.db.collection('outlinks').findOne({ shareId: token }))?._id;
    expect(await t.app.mongo.db.collection('outlink_channel_events').findOne({ _id: `${linkId}:ev-closing` } as never)).toBeNull();
    expect(fake.requests.some((r) => r.path === replyPath('om_closing'))).toBe(false);

    // Feishu delivers the event again; a running process answers it.
    expect((await t.app.inject({ method: 'POST', url, headers: feishuHeaders, payload: body })).statusCode).toBe(200);
    const reply = await fake.waitFor(replyPath('om_closing'));
    expect(reply.body).toEqual({ msg_type: 'text', content: JSON.stringify({ text: 'Echo: during the deploy' }) });
  });
});
