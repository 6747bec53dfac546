import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { multipart } from '../fixtures/datasets/client.js';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { apiKeyHeaders, authHeaders, createApiKey, createUser, login } from '../helpers/platform.js';
import { call, ok } from './apps-helpers.js';
import { answerOnlyGraph, createPublishedApp, simpleChatGraph, sseFrames, startChatApp } from './chat-helpers.js';

let t: TestApp;
let fake: FakeOpenAi;
let tokA: string;
let tokB: string;
let appId: string;

const inject = (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: Record<string, unknown>) =>
  t.app.inject({ method, url: `/api${url}`, ...(payload ? { payload } : {}) });

beforeAll(async () => {
  ({ t, fake } = await startChatApp((f) => ({ TEAM_TOKEN_AUTH_URL: `${f.origin}/team-auth` })));
  fake.route('POST', '/team-auth', (request) => {
    const body = request.body as { teamToken: string };
    return { json: body.teamToken === 'good-team-token' ? { success: true, data: { uid: 'team-user-1' } } : { success: false, message: 'bad team token' } };
  });
  await createUser(t, { username: 'owner', password: 'password-o1' });
  await createUser(t, { username: 'other', password: 'password-x1' });
  tokA = await login(t, 'owner', 'password-o1');
  tokB = await login(t, 'other', 'password-x1');
  appId = await createPublishedApp(t, tokA, 'Shared bot', simpleChatGraph);
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('share link CRUD', () => {
  it('creates, lists, updates and deletes; another team is refused; bad input names the field', async () => {
    const shareId = await ok(t, tokA, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'Public', responseDetail: true, limit: { QPM: 50 } });
    expect(shareId).toMatch(/^[a-z0-9]{24}$/);
    const list = await ok(t, tokA, 'GET', '/support/outLink/list', { appId, type: 'share' });
    expect(list).toEqual([expect.objectContaining({ shareId, name: 'Public', responseDetail: true, usagePoints: 0, limit: expect.objectContaining({ QPM: 50, maxUsagePoints: -1 }) })]);
    const id = list[0]._id;
    // Without a limit object, the reference's schema defaults: QPM 1000, points unlimited.
    const plain = await ok(t, tokA, 'POST', '/support/outLink/create', { appId, type: 'iframe', name: 'Defaults' });
    const [defaults] = (await ok(t, tokA, 'GET', '/support/outLink/list', { appId, type: 'iframe' })).filter((l: { shareId: string }) => l.shareId === plain);
    expect(defaults.limit).toMatchObject({ QPM: 1000, maxUsagePoints: -1 });
    await ok(t, tokA, 'POST', '/support/outLink/update', { _id: id, name: 'Renamed' });
    expect((await ok(t, tokA, 'GET', '/support/outLink/list', { appId, type: 'share' }))[0]).toMatchObject({ name: 'Renamed', responseDetail: true });

    expect((await call(t, tokB, 'GET', '/support/outLink/list', { appId, type: 'share' })).status).toBe(403);
    const foreign = await call(t, tokB, 'POST', '/support/outLink/update', { _id: id, name: 'Hijack' });
    expect(foreign.status).toBe(403);
    expect(foreign.body.statusText).toBe('unAuthLink');
    expect((await call(t, tokB, 'DELETE', '/support/outLink/delete', { id })).status).toBe(403);
    const bad = await call(t, tokA, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'x', teamId: 'evil', limit: { QPM: 'lots' } });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toMatch(/QPM/);
    expect((await call(t, tokA, 'POST', '/support/outLink/create', { appId, type: 'robot', name: 'x' })).body.message).toMatch(/type/);

    await ok(t, tokA, 'DELETE', '/support/outLink/delete', { id });
    expect(await ok(t, tokA, 'GET', '/support/outLink/list', { appId, type: 'share' })).toEqual([]);
    expect((await call(t, tokA, 'DELETE', '/support/outLink/delete', { id })).status).toBe(404);
  });
});

describe('share-link chat', () => {
  // A turn's items were written before its chat: a save stopped between the two left items that
  // no chat owned, and the next caller of that chat id (another visitor) took them over.
  it('a save stopped at the chat leaves nothing the next caller of that chat id gets', async () => {
    const shareId = await ok(t, tokA, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'Lost save', responseDetail: false });
    const repo = t.app.chat.testing.repo;
    const upsertChat = repo.upsertChat;
    repo.upsertChat = async () => {
      throw new Error('connection reset');
    };
    try {
      const first = await inject('POST', '/v1/chat/completions', { shareId, outLinkUid: 'visitor-a', chatId: 'lost-save', messages: [{ role: 'user', content: 'my private question' }] });
      // The answer was given; the save's failure is logged (as the reference).
      expect(first.json().choices[0].message.content).toBe('Echo: my private question');
    } finally {
      repo.upsertChat = upsertChat;
    }
    const second = await inject('POST', '/v1/chat/completions', { shareId, outLinkUid: 'visitor-b', chatId: 'lost-save', messages: [{ role: 'user', content: 'hello' }] });
    expect(second.statusCode, second.body).toBe(200);
    const history = (await inject('GET', `/core/chat/outLink/init?shareId=${shareId}&outLinkUid=visitor-b&chatId=lost-save`)).json().data.history;
    expect(JSON.stringify(history)).not.toContain('my private question');
    expect(history).toHaveLength(2);
  });

  it('chats with share credentials, lists its own history, filters node responses, keeps other users out', async () => {
    const shareId = await ok(t, tokA, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'Web', responseDetail: false });
    const creds = { shareId, outLinkUid: 'visitor-1' };
    const init = await inject('GET', `/core/chat/outLink/init?shareId=${shareId}&outLinkUid=visitor-1`);
    expect(init.statusCode, init.body).toBe(200);
    expect(init.json().data.app).toMatchObject({ name: 'Shared bot', chatConfig: { welcomeText: 'Hello there' } });
    // The visitor's messages carry the link creator's avatar.
    const creator = await t.app.mongo.db.collection('users').findOne({ username: 'owner' });
    expect(init.json().data.userAvatar).toBe(creator?.avatar);
    expect(init.json().data.userAvatar).toBeTruthy();

    const res = await inject('POST', '/v1/chat/completions', { ...creds, chatId: 'share-c1', stream: true, detail: true, messages: [{ role: 'user', content: 'hi from share' }] });
    const frames = sseFrames(res.body);
    expect(frames.filter((f) => f.event === 'answer' && f.data !== '[DONE]').map((f) => JSON.parse(f.data).choices[0].delta.content ?? '').join('')).toBe('Echo: hi from share');
    // responseDetail is off on this link: no flowResponses frame.
    expect(frames.some((f) => f.event === 'flowResponses')).toBe(false);

    const detail = (await inject('POST', '/v1/chat/completions', { ...creds, detail: true, messages: [{ role: 'user', content: 'x' }] })).json();
    expect(detail.responseData).toEqual([]);

    const histories = await inject('POST', '/core/chat/getHistories', creds);
    expect(histories.json().data.map((h: { chatId: string }) => h.chatId)).toEqual(['share-c1']);
    // The web client's share page asks before its init answered the app: an empty appId is none.
    const early = await inject('POST', '/core/chat/getHistories', { ...creds, appId: '' });
    expect(early.statusCode, early.body).toBe(200);
    expect(early.json().data.map((h: { chatId: string }) => h.chatId)).toEqual(['share-c1']);
    const otherVisitor = await inject('POST', '/core/chat/getHistories', { shareId, outLinkUid: 'visitor-2' });
    expect(otherVisitor.json().data).toEqual([]);
    const steal = await inject('POST', '/v1/chat/completions', { shareId, outLinkUid: 'visitor-2', chatId: 'share-c1', messages: [{ role: 'user', content: 'x' }] });
    expect(steal.json().statusText ?? sseFrames(steal.body).find((f) => f.event === 'error')?.data).toMatch(/unAuthChat/);
    expect((await inject('DELETE', `/core/chat/delHistory?appId=${appId}&chatId=share-c1&shareId=${shareId}&outLinkUid=visitor-2`)).statusCode).toBe(403);

    const initAgain = (await inject('GET', `/core/chat/outLink/init?shareId=${shareId}&outLinkUid=visitor-1&chatId=share-c1`)).json().data;
    expect(initAgain.history).toHaveLength(2);
    expect(initAgain.history[1].responseData).toBeUndefined();

    // The owner does not see share chats among their own histories (reference 4.8.10).
    expect(await ok(t, tokA, 'POST', '/core/chat/getHistories', { appId })).toEqual([]);
    const links = await ok(t, tokA, 'GET', '/support/outLink/list', { appId, type: 'share' });
    expect(links.find((l: { shareId: string }) => l.shareId === shareId).usagePoints).toBeCloseTo(3);

    await inject('DELETE', `/core/chat/clearHistories?shareId=${shareId}&outLinkUid=visitor-1`);
    expect((await inject('POST', '/core/chat/getHistories', creds)).json().data).toEqual([]);
  });

  it('marks the link used on a free turn too (lastTime), writing it at most once a minute', async () => {
    const freeApp = await createPublishedApp(t, tokA, 'Free bot', answerOnlyGraph);
    const shareId = await ok(t, tokA, 'POST', '/support/outLink/create', { appId: freeApp, type: 'share', name: 'Free' });
    const lastUse = async () => {
      const links = await ok(t, tokA, 'GET', '/support/outLink/list', { appId: freeApp, type: 'share' });
      const link = links.find((l: { shareId: string }) => l.shareId === shareId);
      return { lastTime: link.lastTime as string | undefined, usagePoints: link.usagePoints as number };
    };
    const turn = async () => {
      const res = await inject('POST', '/v1/chat/completions', { shareId, outLinkUid: 'visitor-free', messages: [{ role: 'user', content: 'hello' }] });
      expect(res.statusCode, res.body).toBe(200);
    };
    expect((await lastUse()).lastTime).toBeUndefined();
    const clock = t.app.identity.clock;
    const realNow = clock.now;
    const start = Date.now();
    try {
      clock.now = () => start;
      await turn();
      expect(await lastUse()).toEqual({ lastTime: new Date(start).toISOString(), usagePoints: 0 });
      clock.now = () => start + 30_000;
      await turn();
      expect((await lastUse()).lastTime).toBe(new Date(start).toISOString());
      clock.now = () => start + 61_000;
      await turn();
      expect(await lastUse()).toEqual({ lastTime: new Date(start + 61_000).toISOString(), usagePoints: 0 });
    } finally {
      clock.now = realNow;
    }
  });

  it('enforces expiry, usage points and an unknown link; the hook decides the uid', async () => {
    const shareId = await ok(t, tokA, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'Limited', limit: { maxUsagePoints: 1 } });
    const creds = { shareId, outLinkUid: 'u1' };
    const first = await inject('POST', '/v1/chat/completions', { ...creds, messages: [{ role: 'user', content: 'one' }] });
    expect(first.statusCode, first.body).toBe(200);
    const second = await inject('POST', '/v1/chat/completions', { ...creds, messages: [{ role: 'user', content: 'two' }] });
    expect(second.statusCode).toBe(403);
    expect(second.json()).toMatchObject({ code: 501, statusText: 'linkUnInvalid' });
    expect(second.json().message).toMatch(/usage points/);

    const [link] = (await ok(t, tokA, 'GET', '/support/outLink/list', { appId, type: 'share' })).filter((l: { shareId: string }) => l.shareId === shareId);
    await ok(t, tokA, 'POST', '/support/outLink/update', { _id: link._id, limit: { maxUsagePoints: -1, expiredTime: '2020-01-01T00:00:00.000Z' } });
    const expired = await inject('POST', '/v1/chat/completions', { ...creds, messages: [{ role: 'user', content: 'late' }] });
    expect(expired.statusCode).toBe(403);
    expect(expired.json().message).toMatch(/expired/);
    // Only chatting stops: the page and its history still open (the reference checks expiry at chat start).
    const histories = await inject('POST', '/core/chat/getHistories', { ...creds });
    expect(histories.statusCode, histories.body).toBe(200);

    const qpmLink = await ok(t, tokA, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'Slow', limit: { QPM: 1 } });
    expect((await inject('POST', '/v1/chat/completions', { shareId: qpmLink, outLinkUid: 'q', messages: [{ role: 'user', content: 'one' }] })).statusCode).toBe(200);
    const throttled = await inject('POST', '/v1/chat/completions', { shareId: qpmLink, outLinkUid: 'q', messages: [{ role: 'user', content: 'two' }] });
    expect(throttled.statusCode).toBe(429);
    expect(throttled.json().message).toMatch(/1 requests per minute/);
    // QPM counts each visitor address apart (as the reference): another address still chats this minute.
    const elsewhere = await t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', remoteAddress: '10.1.2.3', payload: { shareId: qpmLink, outLinkUid: 'q2', messages: [{ role: 'user', content: 'three' }] } });
    expect(elsewhere.statusCode, elsewhere.body).toBe(200);

    const unknown = await inject('POST', '/v1/chat/completions', { shareId: 'nosuchlink', outLinkUid: 'u', messages: [{ role: 'user', content: 'x' }] });
    expect(unknown.statusCode).toBe(403);
    expect(unknown.json().code).toBe(501);

    fake.route('POST', '/hook/shareAuth/init', (r) => ({ json: (r.body as { token: string }).token === 'secret' ? { success: true, data: { uid: 'real-user' } } : { success: false, message: 'who are you' } }));
    fake.route('POST', '/hook/shareAuth/start', () => ({ json: { success: true, data: { uid: 'real-user' } } }));
    const hooked = await ok(t, tokA, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'Hooked', limit: { hookUrl: `${fake.origin}/hook` } });
    const refused = await inject('POST', '/core/chat/getHistories', { shareId: hooked, outLinkUid: 'guess' });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().message).toBe('who are you');
    const initCalls = () => fake.requests.filter((r) => r.path === '/hook/shareAuth/init').length;
    const initsBefore = initCalls();
    const accepted = await inject('POST', '/v1/chat/completions', { shareId: hooked, outLinkUid: 'secret', chatId: 'h1', messages: [{ role: 'user', content: 'hooked' }] });
    expect(accepted.statusCode, accepted.body).toBe(200);
    // A chat asks the hook `start` only (it names the visitor), not `init` as well.
    expect(initCalls()).toBe(initsBefore);
    const finish = await fake.waitFor('/hook/shareAuth/finish');
    expect(finish.body).toMatchObject({ token: 'secret', appName: 'Shared bot' });
    const chats = await t.app.mongo.db.collection('chats').find({ shareId: hooked }).toArray();
    expect(chats.map((c) => c.outLinkUid)).toEqual(['real-user']);

    // A start that answers {success:true} without a uid (the documented example hooks do): the token is the uid.
    fake.route('POST', '/hook/shareAuth/start', () => ({ json: { success: true } }));
    const bare = await inject('POST', '/v1/chat/completions', { shareId: hooked, outLinkUid: 'plain-token', chatId: 'h2', messages: [{ role: 'user', content: 'hi' }] });
    expect(bare.statusCode, bare.body).toBe(200);
    expect((await t.app.mongo.db.collection('chats').findOne({ shareId: hooked, chatId: 'h2' }))?.outLinkUid).toBe('plain-token');
  });
});

describe('team space', () => {
  it('accepts a token the configured checker approves and refuses others', async () => {
    const me = await ok(t, tokA, 'GET', '/support/user/account/tokenLogin');
    const teamId = me.team.teamId;
    const refused = await inject('GET', `/core/chat/team/init?teamId=${teamId}&appId=${appId}&teamToken=wrong`);
    expect(refused.statusCode).toBe(401);
    expect(refused.json().message).toBe('bad team token');
    const creds = { teamId, teamToken: 'good-team-token' };
    const res = await inject('POST', '/v1/chat/completions', { ...creds, appId, chatId: 'team-c1', messages: [{ role: 'user', content: 'team hello' }] });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().choices[0].message.content).toBe('Echo: team hello');
    const init = await inject('GET', `/core/chat/team/init?teamId=${teamId}&appId=${appId}&teamToken=good-team-token&chatId=team-c1`);
    expect(init.statusCode, init.body).toBe(200);
    expect(init.json().data.history).toHaveLength(2);
    // The user's messages carry the team's avatar.
    const team = await t.app.mongo.db.collection('teams').findOne({ _id: new ObjectId(teamId) });
    expect(init.json().data.userAvatar).toBe(team?.avatar);
    expect(init.json().data.userAvatar).toBeTruthy();
    const histories = await inject('POST', '/core/chat/getHistories', { ...creds, appId });
    expect(histories.json().data.map((h: { chatId: string }) => h.chatId)).toEqual(['team-c1']);
    const chat = await t.app.mongo.db.collection('chats').findOne({ chatId: 'team-c1' });
    expect(chat).toMatchObject({ source: 'team', outLinkUid: 'team-user-1' });
    const otherTeam = await ok(t, tokB, 'GET', '/support/user/account/tokenLogin');
    const cross = await inject('POST', '/v1/chat/completions', { teamId: otherTeam.team.teamId, teamToken: 'good-team-token', appId, messages: [{ role: 'user', content: 'x' }] });
    expect(cross.statusCode).toBe(403);
  });

  it("records a team-space turn's chat and usage under the app's creator, not the team owner", async () => {
    const me = await ok(t, tokA, 'GET', '/support/user/account/tokenLogin');
    const teamId = me.team.teamId;
    const creator = await createUser(t, { username: 'space-creator', password: 'password-s1', teamId, role: 'admin' });
    const creatorApp = await createPublishedApp(t, await login(t, 'space-creator', 'password-s1'), 'Creator bot', simpleChatGraph);
    const res = await inject('POST', '/v1/chat/completions', { teamId, teamToken: 'good-team-token', appId: creatorApp, chatId: 'team-creator-1', messages: [{ role: 'user', content: 'whose turn' }] });
    expect(res.statusCode, res.body).toBe(200);
    await t.app.identity.usage.drain();
    const chat = await t.app.mongo.db.collection('chats').findOne({ chatId: 'team-creator-1' });
    expect(String(chat?.tmbId)).toBe(creator.tmbId);
    const items = await t.app.mongo.db.collection('chatitems').find({ chatId: 'team-creator-1' }).toArray();
    expect(items.map((item) => String(item.tmbId))).toEqual([creator.tmbId, creator.tmbId]);
    const usage = await t.app.mongo.db.collection('usages').findOne({ appId: new ObjectId(creatorApp) });
    expect(String(usage?.tmbId)).toBe(creator.tmbId);
    expect(creator.tmbId).not.toBe(me.team.tmbId);
  });
});

describe('chat uploads from a share page or a team space', () => {
  const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201a5f8e9a90000000049454e44ae426082', 'hex');
  const upload = (fields: Record<string, string>, url = '/common/file/upload', file = { name: 'notes.txt', content: 'chat attachment' }) => {
    const form = multipart(fields, file);
    return t.app.inject({ method: 'POST', url: `/api${url}`, payload: form.payload, headers: form.headers });
  };

  it('take the credentials as form fields, store into the chat bucket under the link\'s team and app, and refuse the rest', async () => {
    const shareId = await ok(t, tokA, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'Uploads' });
    const me = await ok(t, tokA, 'GET', '/support/user/account/tokenLogin');
    const teamId: string = me.team.teamId;
    const share = { shareId, outLinkUid: 'visitor-up' };

    const stored = await upload({ ...share, bucketName: 'chat', metadata: JSON.stringify({ chatId: 'share-up-1', appId: '0123456789abcdef01234567' }) });
    expect(stored.statusCode, stored.body).toBe(200);
    const { fileId, previewUrl } = stored.json().data as { fileId: string; previewUrl: string };
    const doc = await t.app.mongo.db.collection('chat.files').findOne({ _id: new ObjectId(fileId) });
    // The link's team and app, whatever the metadata claims; the credentials are not kept.
    expect(doc).toMatchObject({ teamId: new ObjectId(teamId), chatId: 'share-up-1', appId: new ObjectId(appId), metadata: { teamId, appId } });
    expect(JSON.stringify(doc)).not.toContain('visitor-up');
    expect((await t.app.inject({ method: 'GET', url: previewUrl })).body).toBe('chat attachment');

    const team = await upload({ teamId, teamToken: 'good-team-token', bucketName: 'chat', metadata: JSON.stringify({ chatId: 'team-up-1' }) });
    expect(team.statusCode, team.body).toBe(200);
    const image = await upload({ ...share, type: 'chatImage' }, '/common/file/uploadImage', { name: 'dot.png', content: PNG, type: 'image/png' } as never);
    expect(image.statusCode, image.body).toBe(200);
    expect(image.json().data).toMatch(/^\/api\/system\/img\/[0-9a-f]{24}\.png$/);

    // Not the dataset bucket, no unknown link, no missing or wrong credentials.
    const datasetBucket = await upload({ ...share, bucketName: 'dataset' });
    expect(datasetBucket.statusCode).toBe(403);
    expect(datasetBucket.json().message).toMatch(/chat bucket/);
    expect((await upload({ shareId: 'no-such-link', outLinkUid: 'x', bucketName: 'chat' })).statusCode).toBeGreaterThanOrEqual(400);
    expect((await upload({ teamId, teamToken: 'wrong', bucketName: 'chat' })).statusCode).toBe(401);
    expect((await upload({ bucketName: 'chat' })).statusCode).toBe(401);
    const files = await t.app.mongo.db.collection('chat.files').countDocuments({ teamId: new ObjectId(teamId) });
    expect(files).toBe(2);
  });
});

describe('credentials that must not reach each other', () => {
  it('a team-space visitor cannot open or clear the chat of a share visitor who chose the same uid', async () => {
    const me = await ok(t, tokA, 'GET', '/support/user/account/tokenLogin');
    const teamId = me.team.teamId;
    const shareId = await ok(t, tokA, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'Uid clash' });
    // The team checker answers uid team-user-1; a share visitor picks that very uid.
    const planted = await inject('POST', '/v1/chat/completions', { shareId, outLinkUid: 'team-user-1', chatId: 'clash-c1', messages: [{ role: 'user', content: 'share secret words' }] });
    expect(planted.statusCode, planted.body).toBe(200);
    const team = { teamId, teamToken: 'good-team-token' };
    const opened = await inject('GET', `/core/chat/team/init?teamId=${teamId}&appId=${appId}&teamToken=good-team-token&chatId=clash-c1`);
    expect(opened.body).not.toContain('share secret words');
    expect(opened.statusCode).toBe(403);
    const written = await inject('POST', '/v1/chat/completions', { ...team, appId, chatId: 'clash-c1', messages: [{ role: 'user', content: 'x' }] });
    expect(written.statusCode).toBe(403);
    await inject('DELETE', `/core/chat/clearHistories?teamId=${teamId}&appId=${appId}&teamToken=good-team-token`);
    expect(await t.app.mongo.db.collection('chats').countDocuments({ chatId: 'clash-c1' })).toBe(1);
    expect(await t.app.mongo.db.collection('chatitems').countDocuments({ chatId: 'clash-c1' })).toBe(2);
  });

  it('a messaging channel link is no web share link', async () => {
    const feishu = await ok(t, tokA, 'POST', '/support/outLink/create', { appId, type: 'feishu', name: 'Feishu bot', app: { appId: 'cli_x', appSecret: 's' } });
    for (const [method, url, payload] of [
      ['POST', '/v1/chat/completions', { shareId: feishu, outLinkUid: 'web-visitor', messages: [{ role: 'user', content: 'hi' }] }],
      ['GET', `/core/chat/outLink/init?shareId=${feishu}&outLinkUid=web-visitor`, undefined],
      ['POST', '/core/chat/getHistories', { shareId: feishu, outLinkUid: 'web-visitor' }],
    ] as const) {
      const res = await inject(method, url, payload);
      expect(res.statusCode, url).toBe(403);
      expect(res.json().statusText).toBe('linkUnInvalid');
    }
  });

  it('an app key reads its creator chats only, not other members ones (init and node responses: the manager fallback is for sessions)', async () => {
    const me = await ok(t, tokA, 'GET', '/support/user/account/tokenLogin');
    await createUser(t, { username: 'resdata-manager', password: 'password-r0', teamId: me.team.teamId, role: 'member', permission: 6 });
    await createUser(t, { username: 'resdata-member', password: 'password-r1', teamId: me.team.teamId, role: 'member', permission: 4 });
    const managerToken = await login(t, 'resdata-manager', 'password-r0');
    const memberToken = await login(t, 'resdata-member', 'password-r1');
    // The manager owns his app (manage on it) and makes a key bound to it; a member chats with it.
    const managersApp = await createPublishedApp(t, managerToken, 'Manager bot', simpleChatGraph);
    await ok(t, managerToken, 'POST', '/core/app/update', { appId: managersApp, defaultPermission: 4 });
    const chatted = await t.app.inject({
      method: 'POST',
      url: '/api/v1/chat/completions',
      headers: authHeaders(memberToken),
      payload: { appId: managersApp, chatId: 'member-c1', responseChatItemId: 'member-a1', messages: [{ dataId: 'member-q1', role: 'user', content: 'member question' }] },
    });
    expect(chatted.statusCode, chatted.body).toBe(200);
    const key = await createApiKey(t, managerToken, { appId: managersApp });
    const viaKey = await t.app.inject({ method: 'GET', url: `/api/core/chat/getResData?appId=${managersApp}&chatId=member-c1&dataId=member-a1`, headers: apiKeyHeaders(key) });
    expect(viaKey.statusCode, viaKey.body).toBe(403);
    expect(viaKey.json().statusText).toBe('unAuthChat');
    const initViaKey = await t.app.inject({ method: 'GET', url: `/api/core/chat/init?appId=${managersApp}&chatId=member-c1`, headers: apiKeyHeaders(key) });
    expect(initViaKey.statusCode, initViaKey.body).toBe(403);
    expect(initViaKey.body).not.toContain('member question');
    // A chat made through the key itself is the key creator's: the key reads it.
    const own = await t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: apiKeyHeaders(key), payload: { chatId: 'key-c1', messages: [{ role: 'user', content: 'key question' }] } });
    expect(own.statusCode, own.body).toBe(200);
    expect((await t.app.inject({ method: 'GET', url: `/api/core/chat/init?appId=${managersApp}&chatId=key-c1`, headers: apiKeyHeaders(key) })).body).toContain('key question');
    expect((await ok(t, managerToken, 'GET', '/core/chat/init', { appId: managersApp, chatId: 'member-c1' })).history).toHaveLength(2);
    // The app manager with a session still reads it, from the logs page.
    const viaSession = await ok(t, managerToken, 'GET', '/core/chat/getResData', { appId: managersApp, chatId: 'member-c1', dataId: 'member-a1' });
    expect(viaSession.map((r: { moduleType: string }) => r.moduleType)).toContain('chatNode');
  });
});
