import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { createUser, login } from '../helpers/platform.js';
import { ok } from './apps-helpers.js';
import { createPublishedApp, simpleChatGraph, startChatApp } from './chat-helpers.js';
import { until } from '../helpers/polling.js';
import { feishuTextEvent } from './feishu-events.js';

/**
 * A process runs at most CHANNEL_TURNS_MAX channel turns at once: a message past it is deferred
 * (stored, its lease ended, the take not counted) and run when a turn ends here. The periodic
 * sweep is kept out of the way (10 min), so the free slot is what runs the deferred ones.
 */
let t: TestApp;
let fake: FakeOpenAi;
let tok: string;
let appId: string;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const replyPath = (messageId: string) => `/feishu/open-apis/im/v1/messages/${messageId}/reply`;
const feishuEvent = (i: number) => feishuTextEvent({ eventId: `ev-bound-${i}`, messageId: `om_b${i}`, text: `question ${i}`, key: `b${i}`, appId: 'cli_b' });

beforeAll(async () => {
  // One link may run the process's every turn here (its share would be one): this is the process bound.
  ({ t, fake } = await startChatApp(() => ({ CHANNEL_TURNS_MAX: '2', CHANNEL_TURNS_PER_LINK: '2', CHANNEL_TURN_SWEEP_MS: '600000', LOG_LEVEL: 'silent' })));
  await createUser(t, { username: 'bound-owner', password: 'password-b1' });
  tok = await login(t, 'bound-owner', 'password-b1');
  appId = await createPublishedApp(t, tok, 'Channel bot', simpleChatGraph);
  fake.route('POST', '/feishu/open-apis/auth/v3/tenant_access_token/internal', () => ({ json: { code: 0, tenant_access_token: 't' } }));
  for (let i = 0; i < 6; i++) fake.route('POST', replyPath(`om_b${i}`), () => ({ json: { code: 0 } }));
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('channel turns are bounded per process', () => {
  it('with CHANNEL_TURNS_MAX 2, six messages run two at a time and are each answered once', async () => {
    // The model answers only when released: a turn stays running until then.
    const held: (() => void)[] = [];
    let inFlight = 0;
    let mostInFlight = 0;
    let calls = 0;
    fake.route('POST', '/v1/chat/completions', async () => {
      calls += 1;
      inFlight += 1;
      mostInFlight = Math.max(mostInFlight, inFlight);
      await new Promise<void>((resolve) => held.push(resolve));
      inFlight -= 1;
      return { json: { choices: [{ message: { role: 'assistant', content: 'bounded answer' } }], usage: { prompt_tokens: 1, completion_tokens: 1 } } };
    });
    try {
      const shareId = (await ok(t, tok, 'POST', '/support/outLink/create', {
        appId,
        type: 'feishu',
        name: 'bounded',
        app: { appId: 'cli_b', appSecret: 's', verificationToken: 'vt', apiBaseUrl: `${fake.origin}/feishu` },
      })) as string;
      for (let i = 0; i < 6; i++) {
        const res = await t.app.inject({ method: 'POST', url: `/api/support/outLink/feishu/${shareId}`, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(feishuEvent(i)) });
        expect(res.statusCode, res.body).toBe(200);
      }
      await until(() => held.length >= 2, 'two model calls');
      // The other four are stored, waiting, their take not counted.
      const linkId = String((await t.app.mongo.db.collection('outlinks').findOne({ shareId }))?._id);
      const jobs = t.app.mongo.db.collection<{ _id: string; state?: string; attempts?: number }>('outlink_channel_events');
      const waiting = await jobs.find({ _id: { $regex: `^${linkId}:` }, attempts: 0 }).toArray();
      expect(waiting).toHaveLength(4);
      await sleep(300);
      expect(calls).toBe(2);

      const replies = () => fake.requests.filter((r) => r.path.startsWith('/feishu/open-apis/im/v1/messages/om_b'));
      await until(() => {
        held.shift()?.();
        return replies().length === 6;
      }, 'six replies');
      await sleep(300); // nothing more comes
      expect(mostInFlight).toBe(2);
      expect(calls).toBe(6);
      for (let i = 0; i < 6; i++) expect(replies().filter((r) => r.path === replyPath(`om_b${i}`))).toHaveLength(1);
      await until(async () => (await jobs.countDocuments({ _id: { $regex: `^${linkId}:` }, state: 'done' })) === 6, 'six jobs done');
      expect(await jobs.countDocuments({ _id: { $regex: `^${linkId}:` }, state: 'done', attempts: 1 })).toBe(6);
    } finally {
      for (const release of held.splice(0)) release();
      fake.unroute('POST', '/v1/chat/completions');
    }
  }, 40_000);
});
