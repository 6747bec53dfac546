import type { Db } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChannelPlacesRepo } from '../../src/platform/outlinks/channels/channel-places.repo.js';
import { buildReplica, type TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { holdModelCalls } from '../helpers/held-model-calls.js';
import { until } from '../helpers/polling.js';
import { createUser, login } from '../helpers/platform.js';
import { createPublishedApp, simpleChatGraph, startChatApp } from './chat-helpers.js';
import { createFeishuLink, feishuTextEvent } from './feishu-events.js';

/**
 * A link's share of channel turns (CHANNEL_TURNS_PER_LINK, here 1) holds across the deployment:
 * two processes on one database run one link's messages one at a time, whichever process each
 * reached; another link's message is not held back; a process that stopped while running one
 * gives its place back once its lease ran out. The periodic sweeps are kept out of the way
 * (10 min) but where a test says otherwise: a turn ending is what runs a waiting message.
 */
let t: TestApp;
let replica: TestApp;
let fake: FakeOpenAi;
let tok: string;
let appId: string;

const SHARE_OF_ONE = { CHANNEL_TURNS_MAX: '4', CHANNEL_TURNS_PER_LINK: '1', LOG_LEVEL: 'silent' };
const replicaOf = (overrides: Record<string, string> = {}, beforeReady?: Parameters<typeof buildReplica>[2]) =>
  buildReplica(t, { MODEL_CONFIG_PATH: t.config.MODEL_CONFIG_PATH as string, SSRF_ALLOW_PRIVATE: 'true', CHANNEL_TURN_SWEEP_MS: '600000', ...SHARE_OF_ONE, ...overrides }, beforeReady);
const placeDocs = () => t.app.mongo.db.collection<{ _id: string; linkId: string; place: number; epoch: number; holder: string; until: Date }>('outlink_channel_places');

const replyPath = (messageId: string) => `/feishu/open-apis/im/v1/messages/${messageId}/reply`;
const repliesTo = (messageId: string) => fake.requests.filter((r) => r.path === replyPath(messageId));
const feishuEvent = (link: string, i: number) => feishuTextEvent({ eventId: `ev-dep-${link}-${i}`, messageId: `om_${link}${i}`, text: `ask ${link}-${i}`, key: `dep${link}${i}`, appId: 'cli_s' });

const jobs = () => t.app.mongo.db.collection<{ _id: string; state?: string; attempts?: number }>('outlink_channel_events');
const jobOf = (linkId: string, link: string, i: number) => jobs().findOne({ _id: `${linkId}:ev-dep-${link}-${i}` });
/** Deferred: stored and waiting, its take not counted. */
const isDeferred = async (linkId: string, link: string, i: number) => {
  const job = await jobOf(linkId, link, i);
  return job?.state === 'running' && job.attempts === 0;
};

/** A feishu link of the app; `send(process, i)` delivers its message `i` to that process. */
async function feishuLink(name: string) {
  const { shareId, linkId } = await createFeishuLink(t, tok, appId, fake.origin, name);
  return {
    linkId,
    async send(target: TestApp, i: number) {
      fake.route('POST', replyPath(`om_${name}${i}`), () => ({ json: { code: 0 } }));
      const response = await target.app.inject({ method: 'POST', url: `/api/support/outLink/feishu/${shareId}`, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(feishuEvent(name, i)) });
      expect(response.statusCode, response.body).toBe(200);
    },
  };
}

beforeAll(async () => {
  ({ t, fake } = await startChatApp(() => ({ ...SHARE_OF_ONE, CHANNEL_TURN_SWEEP_MS: '600000' })));
  replica = await replicaOf();
  await createUser(t, { username: 'deployment-share', password: 'password-s1' });
  tok = await login(t, 'deployment-share', 'password-s1');
  appId = await createPublishedApp(t, tok, 'Channel bot', simpleChatGraph);
  fake.route('POST', '/feishu/open-apis/auth/v3/tenant_access_token/internal', () => ({ json: { code: 0, tenant_access_token: 't' } }));
});

afterAll(async () => {
  await replica?.close();
  await t?.close();
  await fake?.close();
});

describe('a link’s share of channel turns holds across the deployment', () => {
  it('two messages of one link reaching two processes run one after the other; another link’s message runs meanwhile; each is answered once', async () => {
    const model = holdModelCalls(fake, (question) => question === 'a0-0' || question === 'b0-0');
    try {
      const a = await feishuLink('a0');
      const b = await feishuLink('b0');
      await a.send(t, 0);
      await until(() => model.asked.includes('a0-0'), 'the first message’s model call');

      // The link's one place is held by the first process: the second process stores the message and waits.
      await a.send(replica, 1);
      await until(async () => model.asked.includes('a0-1') || (await isDeferred(a.linkId, 'a0', 1)), 'the second message run or deferred');
      expect(model.asked).not.toContain('a0-1');

      // Another link's message, on the process where the first link's waits, runs at once.
      await b.send(replica, 0);
      await until(() => model.asked.includes('b0-0'), 'the other link’s model call');
      expect(model.asked).not.toContain('a0-1');

      // The first turn ends: its process, giving the place back, finds the message waiting and runs it.
      model.release('a0-0');
      await until(() => repliesTo('om_a00').length > 0 && repliesTo('om_a01').length > 0, 'both replies of the link');
      model.release('b0-0');
      await until(() => repliesTo('om_b00').length > 0, 'the other link’s reply');
      await until(async () => (await jobs().countDocuments({ _id: { $regex: `^(${a.linkId}|${b.linkId}):` }, state: 'done' })) === 3, 'three jobs done');

      expect(model.mostInFlight('a0')).toBe(1);
      expect(model.asked.indexOf('a0-1')).toBeGreaterThan(model.asked.indexOf('a0-0'));
      for (const id of ['om_a00', 'om_a01', 'om_b00']) expect(repliesTo(id)).toHaveLength(1);
      for (const question of ['a0-0', 'a0-1', 'b0-0']) expect(model.askedCount(question)).toBe(1);
      // Waiting spent no attempt.
      expect(await jobs().countDocuments({ _id: { $regex: `^(${a.linkId}|${b.linkId}):` }, state: 'done', attempts: 1 })).toBe(3);
      // Every place was given back.
      expect(await t.app.mongo.db.collection('outlink_channel_places').countDocuments({ linkId: { $in: [a.linkId, b.linkId] } })).toBe(0);
    } finally {
      model.releaseAll();
    }
  }, 40_000);

  it('a burst of one link’s messages on both processes at once runs one at a time, each once', async () => {
    const model = holdModelCalls(fake, () => true);
    try {
      const burst = await feishuLink('d0');
      const messages = [0, 1, 2, 3, 4, 5];
      await Promise.all(messages.map((i) => burst.send(i % 2 === 0 ? t : replica, i)));
      await until(() => {
        model.held.shift()?.release();
        return messages.every((i) => repliesTo(`om_d0${i}`).length > 0);
      }, 'six replies');
      await until(async () => (await jobs().countDocuments({ _id: { $regex: `^${burst.linkId}:` }, state: 'done' })) === 6, 'six jobs done');
      expect(model.mostInFlight('d0')).toBe(1);
      for (const i of messages) {
        expect(repliesTo(`om_d0${i}`)).toHaveLength(1);
        expect(model.askedCount(`d0-${i}`)).toBe(1);
      }
    } finally {
      model.releaseAll();
    }
  }, 40_000);

  it('a process closed while holding a place gives it back once its lease ran out (its clock run out, not waited for)', async () => {
    const model = holdModelCalls(fake, (question) => question === 'c0-0' && model.askedCount('c0-0') === 1);
    // The stopping process: a short lease, and a close that waits 1 s for its turns.
    const stopping = await replicaOf({ CHANNEL_TURN_LEASE_MS: '1500', SHUTDOWN_TIMEOUT_MS: '2000' });
    // The survivor: the same lease, a sweep every 200 ms.
    const survivor = await replicaOf({ CHANNEL_TURN_LEASE_MS: '1500', CHANNEL_TURN_SWEEP_MS: '200' });
    try {
      const c = await feishuLink('c0');
      await c.send(stopping, 0);
      await until(() => model.asked.includes('c0-0'), 'the first message’s model call');
      // Its model call hangs: the close stops waiting for the turn, which holds the link's place.
      await stopping.close();

      await c.send(survivor, 1);
      await until(async () => model.asked.includes('c0-1') || (await isDeferred(c.linkId, 'c0', 1)), 'the second message run or deferred');
      expect(model.asked).not.toContain('c0-1');

      // The survivor's clock passes the stopped process's lease (its place and its job's).
      const offset = 3_000;
      survivor.app.identity.clock.now = () => Date.now() + offset;
      await until(() => repliesTo('om_c00').length > 0 && repliesTo('om_c01').length > 0, 'both replies, by the survivor');
      await until(async () => (await jobs().countDocuments({ _id: { $regex: `^${c.linkId}:` }, state: 'done' })) === 2, 'both jobs done');

      // The first message ran again on the survivor (the stopped process's call still hangs), the second once.
      expect(model.askedCount('c0-0')).toBe(2);
      expect(model.askedCount('c0-1')).toBe(1);
      for (const id of ['om_c00', 'om_c01']) expect(repliesTo(id)).toHaveLength(1);
      // The survivor ran them one at a time: with the hung call, never more than two of the link in flight.
      expect(model.mostInFlight('c0')).toBe(2);
      expect(await jobOf(c.linkId, 'c0', 0)).toMatchObject({ state: 'done', attempts: 2 });
      expect(await jobOf(c.linkId, 'c0', 1)).toMatchObject({ state: 'done', attempts: 1 });
    } finally {
      model.releaseAll();
      await survivor.close();
    }
  }, 40_000);
});

describe('a turn whose place another took', () => {
  it('stops without answering; its message waits stored, its attempt not counted, and runs once the place is free again', async () => {
    const model = holdModelCalls(fake, (question) => question === 'e0-0' && model.askedCount('e0-0') === 1);
    const runner = await replicaOf({ CHANNEL_TURN_LEASE_MS: '1500', CHANNEL_TURN_SWEEP_MS: '200', LOG_LEVEL: 'info' });
    try {
      const e = await feishuLink('e0');
      await e.send(runner, 0);
      await until(() => model.asked.includes('e0-0'), 'the model call');
      // Another holder in the coming epochs of the link's one place (as after this process stalled a lease).
      const held = await placeDocs().find({ linkId: e.linkId }).toArray();
      // The running turn holds the link's one place, for this epoch and the next.
      expect(held.map((doc) => doc.place)).toEqual([0, 0]);
      const last = Math.max(...held.map((doc) => doc.epoch));
      const foreign = Array.from({ length: 20 }, (_, i) => last + 1 + i).map((epoch) => ({ _id: `${e.linkId}:0:${epoch}`, linkId: e.linkId, place: 0, epoch, holder: 'another', until: new Date((epoch + 1) * 750) }));
      await placeDocs().insertMany(foreign);

      await until(() => runner.logs().includes('its link’s place lapsed and another turn took it'), 'the turn stopped');
      // Its job waits like any message of a full link: its lease ended (not left to lapse, no
      // clock moved) and the stopped take not counted.
      await until(() => isDeferred(e.linkId, 'e0', 0), 'the stopped message waiting stored for a place');
      expect(repliesTo('om_e00')).toHaveLength(0);
      // The place is given back: the message runs again, once.
      await placeDocs().deleteMany({ linkId: e.linkId, holder: 'another' });
      await until(() => repliesTo('om_e00').length > 0, 'the reply');
      await until(async () => (await jobOf(e.linkId, 'e0', 0))?.state === 'done', 'the job done');
      expect(repliesTo('om_e00')).toHaveLength(1);
      expect(model.askedCount('e0-0')).toBe(2);
      // One attempt, as a user would count it: the stop was the link's share, not a failure of the message.
      expect(await jobOf(e.linkId, 'e0', 0)).toMatchObject({ state: 'done', attempts: 1 });
    } finally {
      model.releaseAll();
      await runner.close();
    }
  }, 40_000);
});

describe('a place given back while its renewal is on its way', () => {
  it('leaves no place of its holder behind, and the link’s next message runs at once', async () => {
    const model = holdModelCalls(fake, (question) => question === 'g0-0');
    // Half the 1500 ms lease: the epoch a place document is inserted for.
    const epochMs = 750;
    // Until the gate opens, a renewal that inserts a place document waits at it (the real repository underneath).
    let gateOpen = false;
    let openGate = () => {};
    const gate = new Promise<void>((resolve) => {
      openGate = () => {
        gateOpen = true;
        resolve();
      };
    });
    const heldRenewals: Promise<unknown>[] = [];
    let holder: string | undefined;
    const givenBack: string[] = [];
    const runner = await replicaOf({ CHANNEL_TURN_LEASE_MS: '1500' }, (app) => {
      const { renew, giveBack } = app.channelPlaces;
      app.channelPlaces.renew = (held, nowMs) => {
        if (gateOpen || held.epochs.includes(Math.floor(nowMs / epochMs) + 1)) return renew(held, nowMs);
        holder = held.holder;
        const renewal = gate.then(() => renew(held, nowMs));
        heldRenewals.push(renewal);
        return renewal;
      };
      app.channelPlaces.giveBack = async (held) => {
        await giveBack(held);
        givenBack.push(held.holder);
      };
    });
    try {
      const g = await feishuLink('g0');
      await g.send(runner, 0);
      await until(() => model.asked.includes('g0-0'), 'the model call');
      await until(() => holder !== undefined, 'a renewal inserting the next epoch’s place, held');

      // The turn ends with the renewal's insert still on its way; it lands after the turn's end.
      model.release('g0-0');
      await until(() => repliesTo('om_g00').length > 0, 'the reply');
      openGate();
      await Promise.allSettled(heldRenewals);
      await until(() => holder !== undefined && givenBack.includes(holder), 'the place given back');
      await until(async () => (await jobOf(g.linkId, 'g0', 0))?.state === 'done', 'the job done');
      expect(await placeDocs().countDocuments({ holder })).toBe(0);

      // Nothing holds the link's place: its next message runs (no periodic sweep runs in this test).
      await g.send(runner, 1);
      await until(() => repliesTo('om_g01').length > 0, 'the next message’s reply');
      expect(await jobOf(g.linkId, 'g0', 1)).toMatchObject({ attempts: 1 });
    } finally {
      openGate();
      model.releaseAll();
      await runner.close();
    }
  }, 40_000);
});

describe('a link’s places', () => {
  it('taken by many at once on two processes go to exactly its share; a holder whose place lapsed and was taken finds it lost', async () => {
    const linkId = 'places-exact';
    const places = [t.app.channelPlaces, replica.app.channelPlaces];
    const now = Date.now();
    const takes = await Promise.all(Array.from({ length: 10 }, (_, i) => places[i % 2]?.take(linkId, now)));
    const holders = takes.filter((place) => place !== null && place !== undefined);
    expect(holders).toHaveLength(1);
    const [first] = holders;
    if (!first) throw new Error('no place taken');
    expect(await replica.app.channelPlaces.take(linkId, now)).toBeNull();
    expect(await t.app.channelPlaces.renew(first, now)).toBe('held');

    // Three epochs (half a 60 s lease each) on, with no renewal between: the place lapsed, and another takes it.
    const later = now + 90_000;
    const second = await replica.app.channelPlaces.take(linkId, later);
    expect(second).not.toBeNull();
    expect(await t.app.channelPlaces.renew(first, later)).toBe('lost');
    if (second) await replica.app.channelPlaces.giveBack(second);
    await t.app.channelPlaces.giveBack(first);
    expect(await t.app.mongo.db.collection('outlink_channel_places').countDocuments({ linkId })).toBe(0);
  });

  it('given back, are renewed no more: a renewal after the give-back inserts nothing for its holder', async () => {
    const linkId = 'places-given-back';
    const now = Date.now();
    const place = await t.app.channelPlaces.take(linkId, now);
    if (!place) throw new Error('no place taken');
    await t.app.channelPlaces.giveBack(place);
    // Two epochs on: a renewal would insert the next ones.
    expect(await t.app.channelPlaces.renew(place, now + 60_000)).toBe('lost');
    expect(await placeDocs().countDocuments({ linkId })).toBe(0);
  });

  it('given back while a renewal’s insert is on its way, keep none of its documents', async () => {
    const linkId = 'places-given-back-mid-insert';
    // The repository over the real collection, its inserts of one document held until released.
    let releaseInsert = () => {};
    const insertHeld = new Promise<void>((resolve) => {
      releaseInsert = resolve;
    });
    let insertStarted = false;
    const collection = placeDocs();
    const heldInserts = new Proxy(collection, {
      get: (target, key) =>
        key === 'insertOne'
          ? async (...args: Parameters<typeof collection.insertOne>) => {
              insertStarted = true;
              await insertHeld;
              return target.insertOne(...args);
            }
          : Reflect.get(target, key, target),
    });
    const places = createChannelPlacesRepo({ collection: () => heldInserts } as unknown as Db, { share: 1, epochMs: 30_000 });
    const now = Date.now();
    const place = await places.take(linkId, now);
    if (!place) throw new Error('no place taken');
    const renewing = places.renew(place, now + 60_000);
    await until(() => insertStarted, 'the renewal’s insert');
    await places.giveBack(place);
    releaseInsert();
    expect(await renewing).toBe('lost');
    expect(await placeDocs().countDocuments({ linkId })).toBe(0);
  });
});
