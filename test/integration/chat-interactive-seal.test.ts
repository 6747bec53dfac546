import { ObjectId } from 'mongodb';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { ok } from './apps-helpers.js';
import { createPublishedApp, selectGraph, sseFrames, startChatApp } from './chat-helpers.js';

/**
 * An interactive state a run hands out (a userSelect stops it) is resumed from a request's
 * messages only by the caller it was handed to, in its chat, while the app runs the version it
 * came from, for 24 hours (interactive-seal.ts). The chat's own stored state resumes as stored.
 */
let t: TestApp;
let fake: FakeOpenAi;
let token: string;
let appId: string;
let shareId: string;


const HOUR = 3_600_000;
const NOT_HANDED_OUT = /^The interactive state in messages was not answered by this app to this caller, in this chat, from the version it runs now/;
const EXPIRED = /^The interactive state in messages expired/;

type Interactive = Record<string, unknown>;

/** A share-link visitor's turn; `interactive` brings a state back in the messages. */
function visitorTurn(outLinkUid: string, options: { chatId?: string; interactive?: Interactive; answer?: string } = {}) {
  const messages = options.interactive
    ? [{ role: 'user', content: 'start' }, { role: 'assistant', content: '', interactive: options.interactive }, { role: 'user', content: options.answer ?? 'Confirm' }]
    : [{ role: 'user', content: options.answer ?? 'start' }];
  return t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', payload: { shareId, outLinkUid, chatId: options.chatId, detail: true, messages } });
}

async function stateHandedTo(outLinkUid: string, chatId?: string): Promise<Interactive> {
  const res = await visitorTurn(outLinkUid, { chatId });
  expect(res.statusCode, res.body).toBe(200);
  const [value] = res.json().choices[0].message.content;
  expect(value).toMatchObject({ type: 'interactive' });
  return value.interactive;
}

function expectRefused(res: { statusCode: number; json: () => { message: string } }, message: RegExp): void {
  expect(res.statusCode).toBe(400);
  expect(res.json().message).toMatch(message);
}

const expectResumed = (res: { statusCode: number; body: string; json: () => { choices: { message: { content: unknown } }[] } }) => {
  expect(res.statusCode, res.body).toBe(200);
  expect(res.json().choices[0]?.message.content).toBe('\nDone: Confirm');
};

beforeAll(async () => {
  ({ t, fake } = await startChatApp());
  await createUser(t, { username: 'seal-owner', password: 'password-s1' });
  token = await login(t, 'seal-owner', 'password-s1');
  appId = await createPublishedApp(t, token, 'Select bot', selectGraph);
  shareId = await ok(t, token, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'Public' });
});

afterEach(() => {
  t.app.identity.clock.now = () => Date.now();
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('an interactive state brought back in messages', () => {
  it("resumes for the visitor it was handed to; another visitor of the same link replaying it is refused", async () => {
    const state = await stateHandedTo('visitor-a');
    expectRefused(await visitorTurn('visitor-b', { interactive: state }), NOT_HANDED_OUT);
    expectResumed(await visitorTurn('visitor-a', { interactive: state }));
    // What a client echoes back: the issue time, then the MAC.
    expect(state.seal).toMatch(/^\d+\.[\w-]{43}$/);
  });

  it('resumes in the chat it was handed out in only', async () => {
    const inChat = await stateHandedTo('visitor-a', 'seal-chat-1');
    expectRefused(await visitorTurn('visitor-a', { interactive: inChat }), NOT_HANDED_OUT);
    expectRefused(await visitorTurn('visitor-a', { chatId: 'seal-chat-2', interactive: inChat }), NOT_HANDED_OUT);
    const stateless = await stateHandedTo('visitor-a');
    expectRefused(await visitorTurn('visitor-a', { chatId: 'seal-chat-3', interactive: stateless }), NOT_HANDED_OUT);
  });

  it('is refused once the app runs another published version (the same graph published again)', async () => {
    const app = await createPublishedApp(t, token, 'Republished bot', selectGraph);
    const caller = authHeaders(token);
    const turn = (interactive?: Interactive) =>
      t.app.inject({
        method: 'POST',
        url: '/api/v1/chat/completions',
        headers: caller,
        payload: { appId: app, detail: true, messages: interactive ? [{ role: 'user', content: 'start' }, { role: 'assistant', content: '', interactive }, { role: 'user', content: 'Confirm' }] : [{ role: 'user', content: 'start' }] },
      });
    const state = (await turn()).json().choices[0].message.content[0].interactive;
    expectResumed(await turn(state));
    await ok(t, token, 'POST', `/core/app/version/publish?appId=${app}`, { ...selectGraph, isPublish: true, versionName: 'v2' });
    expectRefused(await turn(state), NOT_HANDED_OUT);
    // A state of the version it runs now resumes.
    expectResumed(await turn((await turn()).json().choices[0].message.content[0].interactive));
  });

  it("a state of the editor's debug chat (the graph it sent) is not resumed on the published app", async () => {
    const debug = await t.app.inject({
      method: 'POST',
      url: '/api/core/chat/chatTest',
      headers: authHeaders(token),
      payload: { appId, nodes: selectGraph.nodes, edges: selectGraph.edges, messages: [{ role: 'user', content: 'start' }] },
    });
    expect(debug.statusCode).toBe(200);
    const { interactive } = JSON.parse(sseFrames(debug.body).find((frame) => frame.event === 'interactive')!.data);
    expect(interactive.seal).toEqual(expect.any(String));
    const replay = await t.app.inject({
      method: 'POST',
      url: '/api/v1/chat/completions',
      headers: authHeaders(token),
      payload: { appId, messages: [{ role: 'user', content: 'start' }, { role: 'assistant', content: '', interactive }, { role: 'user', content: 'Confirm' }] },
    });
    expectRefused(replay, NOT_HANDED_OUT);
  });

  it('expires 24 hours after it was handed out; the chat it was stored in still resumes from it', async () => {
    const start = Date.now();
    t.app.identity.clock.now = () => start;
    const state = await stateHandedTo('visitor-c');
    const stored = await stateHandedTo('visitor-c', 'seal-chat-stored');
    t.app.identity.clock.now = () => start + 24 * HOUR - 60_000;
    expectResumed(await visitorTurn('visitor-c', { interactive: state }));
    t.app.identity.clock.now = () => start + 24 * HOUR + 60_000;
    expectRefused(await visitorTurn('visitor-c', { interactive: state }), EXPIRED);
    // A forged state is not reported as expired: its seal is checked first.
    expectRefused(await visitorTurn('visitor-c', { interactive: { ...state, seal: `${start}.${'A'.repeat(43)}` } }), NOT_HANDED_OUT);
    expect(stored.seal).toEqual(expect.any(String));
    expectResumed(await visitorTurn('visitor-c', { chatId: 'seal-chat-stored', answer: 'Confirm' }));
  });
});

describe('the graph a state is sealed under', () => {
  const ownerTurn = (app: string, payload: Record<string, unknown>) =>
    t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: authHeaders(token), payload: { appId: app, detail: true, ...payload } });
  const resumeMessages = (interactive: Interactive) => [{ role: 'user', content: 'start' }, { role: 'assistant', content: '', interactive }, { role: 'user', content: 'Confirm' }];

  it("comes from the same read of the app's version as the graph the turn runs (a publish between two reads could seal one version's state as another's)", async () => {
    const apps = t.app.apps;
    const original = apps.latestVersion;
    let reads = 0;
    apps.latestVersion = Object.assign((app: Parameters<typeof original>[0]) => {
      reads += 1;
      return original(app);
    }, original);
    try {
      await stateHandedTo('visitor-reads');
    } finally {
      apps.latestVersion = original;
    }
    expect(reads).toBe(1);
  });

  it("of an app with neither a version nor a draft mark (stored before either existed) stays put when the owner's chat turns touch the app", async () => {
    const db = t.app.mongo.db;
    const legacy = (await ok(t, token, 'POST', '/core/app/create', { name: 'Legacy bot', type: 'advanced', modules: selectGraph.nodes, edges: selectGraph.edges, chatConfig: selectGraph.chatConfig })) as string;
    await db.collection('app_versions').deleteMany({ appId: new ObjectId(legacy) });
    await db.collection('apps').updateOne({ _id: new ObjectId(legacy) }, { $unset: { draftWriteId: '' } });
    // A write through the service (not of the draft), so every cache reads the app as now stored.
    await ok(t, token, 'POST', '/core/app/update', { appId: legacy, name: 'Legacy bot, renamed' });
    const stored = await db.collection('apps').findOne({ _id: new ObjectId(legacy) });
    expect(stored?.draftWriteId).toBeUndefined();

    const state = (await ownerTurn(legacy, { messages: [{ role: 'user', content: 'start' }] })).json().choices[0].message.content[0].interactive;
    // The owner's own online chat turn writes the app's updateTime (apps.touch), a second later.
    const later = Date.now() + 1000;
    t.app.identity.clock.now = () => later;
    expect((await ownerTurn(legacy, { chatId: 'legacy-owner-chat', messages: [{ role: 'user', content: 'start' }] })).statusCode).toBe(200);
    expect((await db.collection('apps').findOne({ _id: new ObjectId(legacy) }))?.updateTime).not.toEqual(stored?.updateTime);
    expectResumed(await ownerTurn(legacy, { messages: resumeMessages(state) }));
  });
});
