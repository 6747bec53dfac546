import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildReplica, type TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { holdModelCalls } from '../helpers/held-model-calls.js';
import { failsOnce } from '../helpers/forced-failures.js';
import { createUser, login } from '../helpers/platform.js';
import { ok } from './apps-helpers.js';
import { createPublishedApp, simpleChatGraph, startChatApp } from './chat-helpers.js';
import { until } from '../helpers/polling.js';
import { createFeishuLink, feishuTextEvent } from './feishu-events.js';

/**
 * One link runs at most its share of a process's channel turns (CHANNEL_TURNS_PER_LINK, by default
 * a quarter of CHANNEL_TURNS_MAX): its messages past it are deferred as those past the process
 * bound are, and run later once each; another link's message starts at once, and a freed turn goes
 * to a link running nothing before a busy link's backlog. The periodic sweep is kept out of the
 * way (10 min): the turns ending here are what run the deferred messages.
 */
let t: TestApp;
let fake: FakeOpenAi;
let tok: string;
let appId: string;

const replyPath = (messageId: string) => `/feishu/open-apis/im/v1/messages/${messageId}/reply`;
const repliesTo = (messageId: string) => fake.requests.filter((r) => r.path === replyPath(messageId));
/** Message `i` of link `link` (its own event, message and chat ids), asking `<link>-<i>`. */
const feishuEvent = (link: string, i: number) => feishuTextEvent({ eventId: `ev-share-${link}-${i}`, messageId: `om_${link}${i}`, text: `ask ${link}-${i}`, key: `${link}${i}`, appId: 'cli_s' });

/** A feishu link of the app; its id and the messages it was sent. */
async function feishuLink(target: TestApp, name: string) {
  const { shareId, linkId } = await createFeishuLink(t, tok, appId, fake.origin, name);
  return {
    linkId,
    async send(i: number) {
      fake.route('POST', replyPath(`om_${name}${i}`), () => ({ json: { code: 0 } }));
      return target.app.inject({ method: 'POST', url: `/api/support/outLink/feishu/${shareId}`, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(feishuEvent(name, i)) });
    },
  };
}

const jobs = () => t.app.mongo.db.collection<{ _id: string; state?: string; attempts?: number }>('outlink_channel_events');
/** Jobs of a link waiting after a deferral (stored, their take not counted). */
const deferredOf = (linkId: string) => jobs().countDocuments({ _id: { $regex: `^${linkId}:` }, state: 'running', attempts: 0 });

beforeAll(async () => {
  // Eight turns per process: a link's share is two.
  ({ t, fake } = await startChatApp(() => ({ CHANNEL_TURNS_MAX: '8', CHANNEL_TURN_SWEEP_MS: '600000', LOG_LEVEL: 'silent' })));
  await createUser(t, { username: 'share-owner', password: 'password-s1' });
  tok = await login(t, 'share-owner', 'password-s1');
  appId = await createPublishedApp(t, tok, 'Channel bot', simpleChatGraph);
  fake.route('POST', '/feishu/open-apis/auth/v3/tenant_access_token/internal', () => ({ json: { code: 0, tenant_access_token: 't' } }));
});

afterEach(() => {
  fake.unroute('POST', '/v1/chat/completions');
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('a link runs at most its share of a process’s channel turns', () => {
  it('a burst on one link past its share is deferred, another link’s message starts at once, and every message is answered once', async () => {
    const model = holdModelCalls(fake);
    try {
      const busy = await feishuLink(t, 'a');
      const other = await feishuLink(t, 'b');
      for (let i = 0; i < 5; i++) expect((await busy.send(i)).statusCode).toBe(200);
      await until(() => model.asked.length >= 2, 'two model calls of the busy link');
      // The other three wait, stored, though six of the process's eight turns are free.
      expect(await deferredOf(busy.linkId)).toBe(3);

      expect((await other.send(0)).statusCode).toBe(200);
      await until(() => model.asked.includes('b-0'), 'the other link’s model call');
      // Nothing of the busy link was released: still only its share of calls was made.
      expect(model.asked.filter((question) => question.startsWith('a-'))).toHaveLength(2);

      const answered = () => [0, 1, 2, 3, 4].every((i) => repliesTo(`om_a${i}`).length > 0) && repliesTo('om_b0').length > 0;
      await until(() => {
        model.held.shift()?.release();
        return answered();
      }, 'six replies');
      await until(async () => (await jobs().countDocuments({ _id: { $regex: `^(${busy.linkId}|${other.linkId}):` }, state: 'done' })) === 6, 'six jobs done');
      for (let i = 0; i < 5; i++) expect(repliesTo(`om_a${i}`)).toHaveLength(1);
      expect(repliesTo('om_b0')).toHaveLength(1);
      expect(model.asked.filter((question) => question.startsWith('a-')).sort()).toEqual(['a-0', 'a-1', 'a-2', 'a-3', 'a-4']);
      expect(model.mostInFlight('a')).toBe(2);
      // Each ran on its first counted take: deferrals spend no attempt.
      expect(await jobs().countDocuments({ _id: { $regex: `^(${busy.linkId}|${other.linkId}):` }, state: 'done', attempts: 1 })).toBe(6);
    } finally {
      model.releaseAll();
    }
  }, 40_000);

  it('a turn freed by a busy link goes to a link whose message waits with nothing running, before the busy link’s older backlog', async () => {
    const model = holdModelCalls(fake);
    try {
      // Four links at their share fill the eight turns; the busy one has two more waiting.
      const [busy, c, d, e] = [await feishuLink(t, 'p'), await feishuLink(t, 'c'), await feishuLink(t, 'd'), await feishuLink(t, 'e')];
      for (let i = 0; i < 4; i++) expect((await busy.send(i)).statusCode).toBe(200);
      for (const link of [c, d, e]) for (let i = 0; i < 2; i++) expect((await link.send(i)).statusCode).toBe(200);
      await until(() => model.asked.length >= 8, 'eight model calls');
      expect(await deferredOf(busy.linkId)).toBe(2);
      // Its message comes after the busy link's backlog, and waits for a turn.
      const late = await feishuLink(t, 'l');
      expect((await late.send(0)).statusCode).toBe(200);
      expect(await deferredOf(late.linkId)).toBe(1);

      const [first] = model.asked.filter((question) => question.startsWith('p-'));
      model.release(first as string);
      await until(() => model.asked.length >= 9, 'a model call in the freed turn');
      expect(model.asked[8]).toBe('l-0');

      const all = [...[0, 1, 2, 3].map((i) => `om_p${i}`), ...['c', 'd', 'e'].flatMap((l) => [`om_${l}0`, `om_${l}1`]), 'om_l0'];
      await until(() => {
        model.held.shift()?.release();
        return all.every((id) => repliesTo(id).length > 0);
      }, 'every reply');
      await until(async () => (await jobs().countDocuments({ _id: { $regex: `^(${[busy, c, d, e, late].map((l) => l.linkId).join('|')}):` }, state: 'done' })) === 11, 'eleven jobs done');
      for (const id of all) expect(repliesTo(id)).toHaveLength(1);
      expect(model.asked).toHaveLength(11);
    } finally {
      model.releaseAll();
    }
  }, 40_000);
});

describe('a deferral that cannot be written', () => {
  it('still acknowledges the stored message, a redelivery of it does nothing, and it runs once after its lease lapsed', async () => {
    const model = holdModelCalls(fake);
    // One turn per process, a short lease, and a sweep that finds the lapsed job soon.
    const replica = await buildReplica(t, { MODEL_CONFIG_PATH: t.config.MODEL_CONFIG_PATH as string, SSRF_ALLOW_PRIVATE: 'true', CHANNEL_TURNS_MAX: '1', CHANNEL_TURN_LEASE_MS: '1000', CHANNEL_TURN_SWEEP_MS: '200', LOG_LEVEL: 'silent' });
    try {
      const link = await feishuLink(replica, 'w');
      expect((await link.send(0)).statusCode).toBe(200);
      await until(() => model.asked.length >= 1, 'the first model call');

      failsOnce(replica.app.channelEvents, 'defer');
      const second = await link.send(1);
      expect(second.statusCode, second.body).toBe(200);
      // The channel's redelivery (as after a 5xx) finds the stored job: no second turn.
      expect((await link.send(1)).statusCode).toBe(200);
      expect(await jobs().countDocuments({ _id: `${link.linkId}:ev-share-w-1` })).toBe(1);

      await until(() => {
        model.held.shift()?.release();
        return repliesTo('om_w0').length > 0 && repliesTo('om_w1').length > 0;
      }, 'both replies');
      await until(async () => (await jobs().findOne({ _id: `${link.linkId}:ev-share-w-1` }))?.state === 'done', 'the job done');
    } finally {
      model.releaseAll();
      await replica.close();
    }
    expect(repliesTo('om_w0')).toHaveLength(1);
    expect(repliesTo('om_w1')).toHaveLength(1);
    expect(model.asked.filter((question) => question === 'w-1')).toHaveLength(1);
  }, 40_000);
});

describe('a channel link’s QPM', () => {
  it('counts its channel turns: a message past it is acknowledged, waits for the next minute, and is then answered once, as that minute starts', async () => {
    // The periodic sweep is kept out of the way (10 min): the sweep timed for the next minute is what runs the message.
    const replica = await buildReplica(t, { MODEL_CONFIG_PATH: t.config.MODEL_CONFIG_PATH as string, SSRF_ALLOW_PRIVATE: 'true', CHANNEL_TURN_SWEEP_MS: '600000', LOG_LEVEL: 'silent' });
    // The replica's clock (its QPM minutes and job leases) set to a second of one coming minute, moving with real time.
    const minute = Math.floor((Date.now() + 120_000) / 60_000) * 60_000;
    const secondOfMinute = (second: number) => {
      const offset = minute + second * 1000 - Date.now();
      replica.app.identity.clock.now = () => Date.now() + offset;
    };
    try {
      const shareId = (await ok(t, tok, 'POST', '/support/outLink/create', {
        appId,
        type: 'feishu',
        name: 'q',
        limit: { QPM: 2 },
        app: { appId: 'cli_s', appSecret: 's', verificationToken: 'vt', apiBaseUrl: `${fake.origin}/feishu` },
      })) as string;
      const linkId = String((await t.app.mongo.db.collection('outlinks').findOne({ shareId }))?._id);
      const send = (i: number) => {
        fake.route('POST', replyPath(`om_q${i}`), () => ({ json: { code: 0 } }));
        return replica.app.inject({ method: 'POST', url: `/api/support/outLink/feishu/${shareId}`, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(feishuEvent('q', i)) });
      };
      const asked = (i: number) => fake.requests.filter((r) => r.path === '/v1/chat/completions' && JSON.stringify(r.body).includes(`ask q-${i}`)).length;
      secondOfMinute(1);
      for (const i of [0, 1]) {
        expect((await send(i)).statusCode).toBe(200);
        await until(() => repliesTo(`om_q${i}`).length > 0, `the reply to message ${i}`);
      }
      // Two seconds before the minute ends: the third message of the minute.
      secondOfMinute(58);
      expect((await send(2)).statusCode).toBe(200);
      const job = () => jobs().findOne({ _id: `${linkId}:ev-share-q-2` }) as Promise<{ state?: string; attempts?: number; leaseUntil?: Date } | null>;
      // Deferred to the next minute, its take not counted, its model never asked.
      await until(async () => ((await job())?.leaseUntil?.getTime() ?? 0) > replica.app.identity.clock.now() && (await job())?.attempts === 0, 'the third message deferred');
      expect(asked(2)).toBe(0);
      expect(repliesTo('om_q2')).toHaveLength(0);

      // The next minute: its count starts again, and the sweep timed for it runs the message.
      await until(() => repliesTo('om_q2').length > 0, 'the reply to message 2');
      await until(async () => (await job())?.state === 'done', 'the third job done');
    } finally {
      await replica.close();
    }
    for (const i of [0, 1, 2]) expect(repliesTo(`om_q${i}`)).toHaveLength(1);
    expect(fake.requests.filter((r) => r.path === '/v1/chat/completions' && JSON.stringify(r.body).includes('ask q-2'))).toHaveLength(1);
    expect(await jobs().findOne({ _id: { $regex: ':ev-share-q-2$' } })).toMatchObject({ state: 'done', attempts: 1 });
  }, 40_000);
});
