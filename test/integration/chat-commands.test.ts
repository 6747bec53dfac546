/**
 * Database commands of v1/chat/completions (issue 12 point 3): the chat path costs the usage
 * write, plus one chat read and the chat writes with a chatId; the app and its published version
 * are kept per process (under the team's leased stamps) and a write through another replica is
 * used at once.
 */
import { Collection, ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isCredentialEpochKey } from '../../src/platform/identity/credential-epoch.js';
import { buildReplica, buildTestApp, type TestApp } from '../helpers/app.js';
import { commandsDuring, type RecordedCommand } from '../helpers/command-counter.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { apiKeyHeaders, createApiKey, createUser, login } from '../helpers/platform.js';
import { until } from '../helpers/polling.js';
import { ok } from './apps-helpers.js';
import { createPublishedApp, simpleChatGraph, startChatApp } from './chat-helpers.js';

let t: TestApp;
let second: TestApp;
let fake: FakeOpenAi;
let tok: string;
let appId: string;
let key: string;

/**
 * Credential reads and writes (key, member, user; the key's lastUsedTime and charged points) and
 * the revocation epoch read (counted by perf-auth.test.ts): not the chat path's.
 */
const CREDENTIAL_COLLECTIONS = new Set(['openapis', 'team_members', 'users']);
/** The team's app stamps, read at most once per lease (100 ms) whatever the traffic. */
const isAppStampRead = (c: RecordedCommand) => c.name === 'find' && /^(apps|app-workflows):/.test(c.key ?? '');
const chatPath = (commands: RecordedCommand[]) =>
  commands
    .filter((c) => !CREDENTIAL_COLLECTIONS.has(c.collection) && !(c.name === 'find' && isCredentialEpochKey(c.key)) && !isAppStampRead(c))
    .map((c) => `${c.name} ${c.collection}`)
    .sort();

const answerGraph = (text: string) => ({
  nodes: [
    { nodeId: 'start', flowNodeType: 'workflowStart', name: 'Start', inputs: [], outputs: [{ id: 'userChatInput', key: 'userChatInput', valueType: 'string' }] },
    { nodeId: 'say', flowNodeType: 'answerNode', name: 'Say', inputs: [{ key: 'text', value: text }], outputs: [] },
  ],
  edges: [{ source: 'start', sourceHandle: 'start-source-right', target: 'say', targetHandle: 'say-target-left' }],
  chatConfig: {},
});

const completions = (target: TestApp, apiKey: string, payload: Record<string, unknown>) =>
  target.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: apiKeyHeaders(apiKey), payload });
const answer = async (target: TestApp, apiKey: string, payload: Record<string, unknown>) => {
  const res = await completions(target, apiKey, payload);
  expect(res.statusCode, res.body).toBe(200);
  return String(res.json().choices[0].message.content).trim();
};

beforeAll(async () => {
  ({ t, fake } = await startChatApp());
  second = await buildReplica(t, { MODEL_CONFIG_PATH: t.config.MODEL_CONFIG_PATH ?? '' });
  await createUser(t, { username: 'alice', password: 'password-a1' });
  tok = await login(t, 'alice', 'password-a1');
  appId = await createPublishedApp(t, tok, 'Echo bot', simpleChatGraph);
  key = await createApiKey(t, tok, { name: 'bound', appId });
});

afterAll(async () => {
  await second?.close();
  await t?.close();
  await fake?.close();
});

describe('v1/chat/completions database commands', () => {
  it('without a chatId: the usage write only, the app and its published version served from memory', async () => {
    expect(await answer(t, key, { messages: [{ role: 'user', content: 'warm up' }] })).toBe('Echo: warm up');
    let text = '';
    const commands = await commandsDuring(t.app, async () => {
      text = await answer(t, key, { messages: [{ role: 'user', content: 'hi' }] });
    });
    expect(text).toBe('Echo: hi');
    // The key's charge goes under its lock (FerretDB loses parallel updates: docs/decisions.md#concurrency).
    expect(chatPath(commands)).toEqual(['delete resource_tree_locks', 'insert resource_tree_locks', 'insert usages']);
    expect(commands.filter(isAppStampRead).length).toBeLessThanOrEqual(2);
  });

  it('closing the service writes the usage records still queued behind the answers', async () => {
    const third = await buildTestApp({ MONGODB_URI: t.config.MONGODB_URI, MODEL_CONFIG_PATH: t.config.MODEL_CONFIG_PATH ?? '' });
    const usages = t.app.mongo.db.collection('usages');
    const before = await usages.countDocuments({ appId: new ObjectId(appId) });
    const turns = 5;
    try {
      // Answered before their records are written (usage.repo.ts); closed at once after.
      const texts = await Promise.all(Array.from({ length: turns }, (_, index) => answer(third, key, { messages: [{ role: 'user', content: `closing ${index}` }] })));
      expect(texts).toEqual(Array.from({ length: turns }, (_, index) => `Echo: closing ${index}`));
    } finally {
      await third.app.close();
    }
    expect(await usages.countDocuments({ appId: new ObjectId(appId) })).toBe(before + turns);
  });

  it('concurrent turns share their usage inserts, and every turn is recorded', async () => {
    const usages = t.app.mongo.db.collection('usages');
    const before = await usages.countDocuments({});
    const turns = 8;
    const commands = await commandsDuring(t.app, () =>
      Promise.all(Array.from({ length: turns }, (_, index) => answer(t, key, { messages: [{ role: 'user', content: `turn ${index}` }] }))),
    );
    const inserts = commands.filter((c) => c.name === 'insert' && c.collection === 'usages');
    expect(inserts.length).toBeGreaterThanOrEqual(1);
    expect(inserts.length).toBeLessThan(turns);
    expect(await usages.countDocuments({})).toBe(before + turns);
  });

  it('concurrent turns of different chats share their chat item inserts', async () => {
    const turns = 6;
    await Promise.all(Array.from({ length: turns }, (_, index) => answer(t, key, { chatId: `grouped-${index}`, messages: [{ role: 'user', content: 'open' }] })));
    // The first turn's item insert waits until every turn has written its chat, so the others'
    // items queue behind it however the machine schedules the turns (it goes first, they go together).
    const chatIds = Array.from({ length: turns }, (_, index) => `grouped-${index}`);
    const since = new Date();
    const insertMany = Collection.prototype.insertMany;
    let held = false;
    Collection.prototype.insertMany = async function (this: Collection, ...args: Parameters<Collection['insertMany']>) {
      if (this.collectionName === 'chatitems' && !held) {
        held = true;
        const chats = t.app.mongo.db.collection('chats');
        await until(async () => (await chats.countDocuments({ chatId: { $in: chatIds }, updateTime: { $gte: since } })) === turns, 'every turn to write its chat');
      }
      return insertMany.apply(this, args);
    } as typeof insertMany;
    let commands: RecordedCommand[];
    try {
      commands = await commandsDuring(t.app, () =>
        Promise.all(chatIds.map((chatId, index) => answer(t, key, { chatId, messages: [{ role: 'user', content: `turn-${index}` }] }))),
      );
    } finally {
      Collection.prototype.insertMany = insertMany;
    }
    expect(held).toBe(true);
    expect(commands.filter((c) => c.name === 'insert' && c.collection === 'chatitems').length).toBeLessThan(turns);
    for (let index = 0; index < turns; index++) {
      const stored = await t.app.mongo.db.collection('chatitems').find({ chatId: `grouped-${index}` }).sort({ time: 1 }).toArray();
      expect(stored.map((item) => item.obj)).toEqual(['Human', 'AI', 'Human', 'AI']);
      expect(JSON.stringify(stored[2]?.value)).toContain(`turn-${index}`);
    }
  });

  it('with a chatId: the chat is read once, its items once, then the turn is written and its chat confirmed', async () => {
    await answer(t, key, { chatId: 'c1', metadata: { plan: 'gold' }, messages: [{ role: 'user', content: 'first' }] });
    const commands = await commandsDuring(t.app, () => answer(t, key, { chatId: 'c1', metadata: { seat: 'A' }, messages: [{ role: 'user', content: 'second' }] }));
    // The second chat read (by id) follows the items: a chat deleted meanwhile takes them with it (saveTurn).
    expect(chatPath(commands)).toEqual(['delete resource_tree_locks', 'find chatitems', 'find chats', 'find chats', 'insert chatitems', 'insert resource_tree_locks', 'insert usages', 'update chats']);
    // The history came from that one items read; the metadata of both turns is kept.
    const sent = fake.requests.filter((r) => r.path === '/v1/chat/completions').at(-1)!.body as { messages: { content: string }[] };
    expect(sent.messages.map((m) => m.content)).toEqual(['Be brief.', 'first', 'Echo: first', 'second']);
    const stored = await t.app.mongo.db.collection('chats').findOne({ chatId: 'c1' });
    expect(stored?.metadata).toMatchObject({ plan: 'gold', seat: 'A' });
  });

  it('through a share link: the link is read once per request (by its credential), not again by the chat start checks or init', async () => {
    const shareId = await ok(t, tok, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'Counted link', responseDetail: true });
    const viaLink = (payload: Record<string, unknown>) => t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', payload: { shareId, outLinkUid: 'visitor', ...payload } });
    const linkReads = (commands: RecordedCommand[]) => commands.filter((c) => c.name === 'find' && c.collection === 'outlinks').length;
    expect((await viaLink({ chatId: 'shared-1', messages: [{ role: 'user', content: 'open' }] })).statusCode).toBe(200);
    const turn = await commandsDuring(t.app, async () => {
      const res = await viaLink({ chatId: 'shared-1', messages: [{ role: 'user', content: 'again' }] });
      expect(res.statusCode, res.body).toBe(200);
    });
    expect(linkReads(turn)).toBe(1);
    const init = await commandsDuring(t.app, async () => {
      const res = await t.app.inject({ method: 'GET', url: `/api/core/chat/outLink/init?shareId=${shareId}&outLinkUid=visitor&chatId=shared-1` });
      expect(res.statusCode, res.body).toBe(200);
    });
    expect(linkReads(init)).toBe(1);
  });

  it('a version published through one instance is run by the next call on another', async () => {
    const botId = await createPublishedApp(t, tok, 'Versioned bot', answerGraph('version one'));
    const botKey = await createApiKey(t, tok, { name: 'versioned', appId: botId });
    expect(await answer(second, botKey, { messages: [{ role: 'user', content: 'x' }] })).toBe('version one');
    // Cached on the second instance: its next call reads no version.
    const cached = await commandsDuring(second.app, () => answer(second, botKey, { messages: [{ role: 'user', content: 'x' }] }));
    expect(chatPath(cached)).not.toContain('find app_versions');

    await ok(t, tok, 'POST', `/core/app/version/publish?appId=${botId}`, { ...answerGraph('version two'), isPublish: true, versionName: 'v2' });
    expect(await answer(second, botKey, { messages: [{ role: 'user', content: 'x' }] })).toBe('version two');
    // Saving a draft (not published) changes nothing chat runs.
    await ok(t, tok, 'POST', `/core/app/version/publish?appId=${botId}`, { ...answerGraph('draft three'), isPublish: false });
    expect(await answer(second, botKey, { messages: [{ role: 'user', content: 'x' }] })).toBe('version two');
  });

  it('an app kept by another instance follows every write of it there: a draft save, a rename, a delete', async () => {
    const botId = await createPublishedApp(t, tok, 'Kept bot', answerGraph('kept'));
    const { teamId } = (await t.app.apps.findApp(botId))!;
    expect((await second.app.apps.findInTeam(teamId, botId))?.name).toBe('Kept bot');
    const draft = answerGraph('draft only');
    await ok(t, tok, 'POST', '/core/app/update', { appId: botId, nodes: draft.nodes, edges: draft.edges });
    expect(JSON.stringify((await second.app.apps.findInTeam(teamId, botId))?.modules)).toContain('draft only');
    await ok(t, tok, 'POST', '/core/app/update', { appId: botId, name: 'Renamed bot' });
    expect((await second.app.apps.findInTeam(teamId, botId))?.name).toBe('Renamed bot');
    await ok(t, tok, 'DELETE', '/core/app/del', { appId: botId });
    expect(await second.app.apps.findInTeam(teamId, botId)).toBeNull();
    // Another team never sees it, kept or not.
    expect(await second.app.apps.findInTeam('0123456789abcdef01234567', botId)).toBeNull();
  });
});
