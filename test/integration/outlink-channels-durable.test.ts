import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildReplica, type TestApp } from '../helpers/app.js';
import type { FakeOpenAi, SeenRequest } from '../helpers/fake-openai.js';
import { createUser, login } from '../helpers/platform.js';
import { ok } from './apps-helpers.js';
import { createPublishedApp, simpleChatGraph, startChatApp } from './chat-helpers.js';

/**
 * A channel message acknowledged to its channel is a stored job: when the process running its
 * turn stops, another replica runs it once the lease lapsed (its sweep, or the channel's
 * redelivery), a live lease or a done job makes a redelivery a repeat, and a turn that keeps
 * failing is given up after three attempts.
 */
let t: TestApp;
let fake: FakeOpenAi;
let tok: string;
let appId: string;

const feishuHeaders = { 'content-type': 'application/json; charset=utf-8' };
const feishuEvent = (eventId: string, messageId: string, text: string) => ({
  schema: '2.0',
  header: { event_id: eventId, event_type: 'im.message.receive_v1', create_time: '1700000000000', token: 'vt', app_id: 'cli_d', tenant_key: 'tk' },
  event: {
    sender: { sender_id: { open_id: `ou_${messageId}` }, sender_type: 'user', tenant_key: 'tk' },
    message: { message_id: messageId, chat_id: `oc_${messageId}`, chat_type: 'p2p', message_type: 'text', create_time: '1700000000000', content: JSON.stringify({ text }) },
  },
});
const replyPath = (messageId: string, base = 'feishu') => `/${base}/open-apis/im/v1/messages/${messageId}/reply`;
const repliesTo = (messageId: string) => fake.requests.filter((r) => r.path === replyPath(messageId));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const modelAnswer = (content: string) => ({ json: { choices: [{ message: { role: 'assistant', content } }], usage: { prompt_tokens: 10, completion_tokens: 5 } } });

/** The first request to `path`, or a failure after `ms` (instead of the test's timeout). */
const waitFor = (path: string, ms = 10_000): Promise<SeenRequest> =>
  Promise.race([fake.waitFor(path), sleep(ms).then(() => Promise.reject(new Error(`nothing reached ${path} within ${ms} ms`)))]);

/** Another process of the deployment; the primary's own sweep is kept out of the way (10 min). */
const replicaOf = (overrides: Record<string, string> = {}) =>
  buildReplica(t, { MODEL_CONFIG_PATH: t.config.MODEL_CONFIG_PATH as string, SSRF_ALLOW_PRIVATE: 'true', CHANNEL_TURN_SWEEP_MS: '600000', ...overrides });

const jobs = () => t.app.mongo.db.collection<{ _id: string; state?: string; owner?: string; attempts?: number }>('outlink_channel_events');
const linkIdOf = async (token: string) => String((await t.app.mongo.db.collection('outlinks').findOne({ shareId: token }))?._id);
const createFeishuLink = (base = 'feishu') =>
  ok(t, tok, 'POST', '/support/outLink/create', { appId, type: 'feishu', name: 'feishu', app: { appId: 'cli_d', appSecret: 'sec', verificationToken: 'vt', apiBaseUrl: `${fake.origin}/${base}` } }) as Promise<string>;
const deliver = (target: TestApp, token: string, event: unknown) =>
  target.app.inject({ method: 'POST', url: `/api/support/outLink/feishu/${token}`, headers: feishuHeaders, payload: JSON.stringify(event) });

/**
 * The model's first call never answers (until `release`), later ones answer `answer`: a turn
 * started then hangs in its process.
 */
function hangFirstModelCall(answer: string) {
  let calls = 0;
  let asked!: () => void;
  let release!: () => void;
  const firstAsked = new Promise<void>((resolve) => {
    asked = resolve;
  });
  const hold = new Promise<void>((resolve) => {
    release = resolve;
  });
  fake.route('POST', '/v1/chat/completions', async () => {
    calls += 1;
    if (calls === 1) {
      asked();
      await hold;
    }
    return modelAnswer(answer);
  });
  return {
    firstAsked,
    calls: () => calls,
    release: () => {
      release();
      fake.unroute('POST', '/v1/chat/completions');
    },
  };
}

beforeAll(async () => {
  ({ t, fake } = await startChatApp(() => ({ CHANNEL_TURN_SWEEP_MS: '600000' })));
  await createUser(t, { username: 'durable-owner', password: 'password-d1' });
  tok = await login(t, 'durable-owner', 'password-d1');
  appId = await createPublishedApp(t, tok, 'Channel bot', simpleChatGraph);
  fake.route('POST', '/feishu/open-apis/auth/v3/tenant_access_token/internal', () => ({ json: { code: 0, tenant_access_token: 't-feishu' } }));
  for (const id of ['om_stopped', 'om_live', 'om_redo', 'om_old']) fake.route('POST', replyPath(id), () => ({ json: { code: 0 } }));
  // A channel API that refuses every token request: no answer can be delivered.
  fake.route('POST', '/feishu-down/open-apis/auth/v3/tenant_access_token/internal', () => ({ status: 500, json: { code: 500 } }));
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('channel turns survive the process running them', () => {
  it('a turn whose process stops is run by another replica’s sweep once its lease lapsed, and answered once', async () => {
    const token = await createFeishuLink();
    const model = hangFirstModelCall('Recovered answer');
    try {
      // Replica A: a short lease, and a close that waits 1 s for its turns.
      const a = await replicaOf({ CHANNEL_TURN_LEASE_MS: '1500', SHUTDOWN_TIMEOUT_MS: '2000' });
      const b = await replicaOf({ CHANNEL_TURN_SWEEP_MS: '200' });
      expect((await deliver(a, token, feishuEvent('ev-stopped', 'om_stopped', 'are you still there'))).statusCode).toBe(200);
      await model.firstAsked;
      await a.close();

      const reply = await waitFor(replyPath('om_stopped'));
      expect(reply.body).toEqual({ msg_type: 'text', content: JSON.stringify({ text: 'Recovered answer' }) });
      await b.close();
      expect(repliesTo('om_stopped')).toHaveLength(1);
      expect(model.calls()).toBe(2);
      expect(await jobs().findOne({ _id: `${await linkIdOf(token)}:ev-stopped` })).toMatchObject({ state: 'done', attempts: 2 });
      expect(b.logs()).toContain('taken over after its lease lapsed (attempt 2 of 3)');
      // The question and its answer are saved once (the stopped process saved nothing).
      const items = await t.app.mongo.db.collection('chatitems').find({ chatId: { $regex: 'oc_om_stopped$' } }).toArray();
      expect(items.map((item) => item.obj)).toEqual(['Human', 'AI']);
    } finally {
      model.release();
    }
  }, 30_000);

  it('a redelivery, and other replicas’ sweeps, leave a job whose lease is live to its process', async () => {
    const token = await createFeishuLink();
    const model = hangFirstModelCall('Answer after a while');
    const a = await replicaOf();
    const b = await replicaOf({ CHANNEL_TURN_SWEEP_MS: '200' });
    try {
      const event = feishuEvent('ev-live', 'om_live', 'take your time');
      expect((await deliver(a, token, event)).statusCode).toBe(200);
      await model.firstAsked;
      const id = `${await linkIdOf(token)}:ev-live`;
      const before = await jobs().findOne({ _id: id });
      expect(before).toMatchObject({ state: 'running', attempts: 1 });

      expect((await deliver(b, token, event)).statusCode).toBe(200);
      await sleep(1_000); // five of B's sweeps
      expect(await jobs().findOne({ _id: id })).toMatchObject({ state: 'running', owner: before?.owner, attempts: 1 });
      expect(model.calls()).toBe(1);

      model.release();
      await waitFor(replyPath('om_live'));
      await a.close();
      await b.close();
      expect(repliesTo('om_live')).toHaveLength(1);
      expect(model.calls()).toBe(1);
      expect(await jobs().findOne({ _id: id })).toMatchObject({ state: 'done', owner: before?.owner });
    } finally {
      model.release();
    }
  }, 30_000);

  it('a process whose turn another took over ends it unsaved and unbilled, its model call cut', async () => {
    // A turn whose client hangs up keeps and bills what ran; one taken over is run by the other
    // process, so this one keeping its partial run would store the question twice and bill it twice.
    const token = await createFeishuLink();
    fake.route('POST', replyPath('om_taken'), () => ({ json: { code: 0 } }));
    const model = hangFirstModelCall('unused');
    const started = new Date();
    try {
      const a = await replicaOf({ CHANNEL_TURN_LEASE_MS: '1500', SHUTDOWN_TIMEOUT_MS: '5000' });
      expect((await deliver(a, token, feishuEvent('ev-taken', 'om_taken', 'are you there'))).statusCode).toBe(200);
      await model.firstAsked;
      // What another replica's takeover leaves: the job held by someone else, so A's next renewal fails.
      await jobs().updateOne({ _id: `${await linkIdOf(token)}:ev-taken` }, { $set: { owner: 'another-replica' } });
      for (let i = 0; i < 200 && !a.logs().includes('another replica took the turn over'); i++) await sleep(50);
      expect(a.logs()).toContain('another replica took the turn over');
      await a.close(); // waits for the turn to end
      expect(await t.app.mongo.db.collection('chatitems').countDocuments({ chatId: { $regex: 'oc_om_taken$' } })).toBe(0);
      expect(await t.app.mongo.db.collection('usages').countDocuments({ appName: 'Channel bot', time: { $gte: started } })).toBe(0);
      expect(repliesTo('om_taken')).toHaveLength(0);
    } finally {
      model.release();
    }
  }, 30_000);

  it('a turn whose answer can never be delivered is given up after three attempts, and not run again', async () => {
    const token = await createFeishuLink('feishu-down');
    const c = await replicaOf({ CHANNEL_TURN_SWEEP_MS: '200' });
    const tokenPath = '/feishu-down/open-apis/auth/v3/tenant_access_token/internal';
    const tokenCalls = () => fake.requests.filter((r) => r.path === tokenPath).length;
    const modelCalls = () => fake.requests.filter((r) => r.path === '/v1/chat/completions' && JSON.stringify(r.body).includes('never delivered')).length;
    expect((await deliver(c, token, feishuEvent('ev-down', 'om_down', 'never delivered'))).statusCode).toBe(200);

    const id = `${await linkIdOf(token)}:ev-down`;
    for (let i = 0; i < 100 && (await jobs().findOne({ _id: id }))?.state !== 'done'; i++) await sleep(100);
    expect(await jobs().findOne({ _id: id })).toMatchObject({ state: 'done', attempts: 3 });
    expect(tokenCalls()).toBe(3);
    // The answer was stored by the first attempt: the later ones only tried to send it.
    expect(modelCalls()).toBe(1);
    expect(c.logs()).toContain(`message ${id} given up after 3 attempts`);
    await sleep(1_000); // five more sweeps
    await c.close();
    expect(tokenCalls()).toBe(3);
  }, 30_000);

  it('a redelivery takes over a job whose lease lapsed; a claim stored before jobs existed is a repeat', async () => {
    const token = await createFeishuLink();
    const linkId = await linkIdOf(token);
    // A claim of the previous version: no state, owner or message.
    await jobs().insertOne({ _id: `${linkId}:ev-old`, at: new Date(), by: 'an-earlier-delivery' } as never);
    expect((await deliver(t, token, feishuEvent('ev-old', 'om_old', 'answered long ago'))).statusCode).toBe(200);

    const model = hangFirstModelCall('Answered on redelivery');
    try {
      const a = await replicaOf({ CHANNEL_TURN_LEASE_MS: '1000', SHUTDOWN_TIMEOUT_MS: '2000' });
      const event = feishuEvent('ev-redo', 'om_redo', 'hello again');
      expect((await deliver(a, token, event)).statusCode).toBe(200);
      await model.firstAsked;
      await a.close();
      await sleep(1_200); // A's lease lapses; the primary's sweep is off: only the redelivery can run it
      expect((await deliver(t, token, event)).statusCode).toBe(200);
      const reply = await waitFor(replyPath('om_redo'));
      expect(reply.body).toEqual({ msg_type: 'text', content: JSON.stringify({ text: 'Answered on redelivery' }) });
      expect(await jobs().findOne({ _id: `${linkId}:ev-redo` })).toMatchObject({ attempts: 2 });
    } finally {
      model.release();
    }
    // Nor does a sweep take it for a lapsed job.
    const sweeper = await replicaOf({ CHANNEL_TURN_SWEEP_MS: '200' });
    await sleep(600);
    await sweeper.close();
    expect(repliesTo('om_old')).toHaveLength(0);
    expect(await t.app.mongo.db.collection('chats').findOne({ chatId: { $regex: 'oc_om_old$' } })).toBeNull();
    expect(await jobs().findOne({ _id: `${linkId}:ev-old` })).toEqual({ _id: `${linkId}:ev-old`, at: expect.any(Date), by: 'an-earlier-delivery' });
  }, 30_000);
});

describe('retention of channel jobs', () => {
  it('removes done jobs and old claims a day old, and lapsed running ones; keeps a running job whose lease is live', async () => {
    const now = Date.now();
    const dayAgo = new Date(now - 25 * 60 * 60_000);
    const live = new Date(now + 60_000);
    await jobs().insertMany([
      { _id: 'ret:done', at: dayAgo, state: 'done', owner: 'o1', attempts: 1 },
      { _id: 'ret:old-claim', at: dayAgo, by: 'o2' },
      { _id: 'ret:lapsed', at: dayAgo, state: 'running', owner: 'o3', leaseUntil: new Date(now - 1000), attempts: 1 },
      { _id: 'ret:live', at: dayAgo, state: 'running', owner: 'o4', leaseUntil: live, attempts: 1 },
      { _id: 'ret:recent', at: new Date(now), state: 'done', owner: 'o5', attempts: 1 },
    ] as never[]);
    await t.app.channelEvents.deleteBefore(new Date(now - 24 * 60 * 60_000), new Date(now));
    const left = (await jobs().find({ _id: { $regex: '^ret:' } }).toArray()).map((doc) => doc._id).sort();
    expect(left).toEqual(['ret:live', 'ret:recent']);
  });
});
