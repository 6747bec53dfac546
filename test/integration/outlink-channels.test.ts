import { Collection } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildReplica, type TestApp } from '../helpers/app.js';
import type { FakeOpenAi, SeenRequest } from '../helpers/fake-openai.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { ok } from './apps-helpers.js';
import { AES_KEY, feishuEncrypt, sha1, wecomEncrypt } from './channel-helpers.js';
import { createPublishedApp, simpleChatGraph, startChatApp } from './chat-helpers.js';

let t: TestApp;
let fake: FakeOpenAi;
let tok: string;
let appId: string;

/** The headers Feishu's event delivery sends with every POST. */
const feishuHeaders = { 'content-type': 'application/json; charset=utf-8', 'user-agent': 'Go-http-client/1.1', 'x-lark-request-timestamp': '1700000000', 'x-lark-request-nonce': '12345' };

beforeAll(async () => {
  ({ t, fake } = await startChatApp());
  await createUser(t, { username: 'im-owner', password: 'password-i1' });
  tok = await login(t, 'im-owner', 'password-i1');
  appId = await createPublishedApp(t, tok, 'Channel bot', simpleChatGraph);
  fake.route('POST', '/feishu/open-apis/auth/v3/tenant_access_token/internal', () => ({ json: { code: 0, tenant_access_token: 't-feishu' } }));
  for (const id of ['om_imA', 'om_feishu']) fake.route('POST', `/feishu/open-apis/im/v1/messages/${id}/reply`, () => ({ json: { code: 0 } }));
  for (const path of ['imC', 'offiaccount']) {
    fake.route('GET', `/wechat-${path}/cgi-bin/token`, () => ({ json: { access_token: 'wx-token', expires_in: 7200 } }));
    fake.route('POST', `/wechat-${path}/cgi-bin/message/custom/send`, () => ({ json: { errcode: 0 } }));
  }
  for (const path of ['imB', 'wecom']) {
    fake.route('GET', `/wecom-${path}/cgi-bin/gettoken`, () => ({ json: { errcode: 0, access_token: 'wecom-token' } }));
    fake.route('POST', `/wecom-${path}/cgi-bin/message/send`, () => ({ json: { errcode: 0 } }));
  }
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

/** A callback timestamp (seconds) the receivers accept: within 5 minutes of the service clock. */
const nowSeconds = () => String(Math.floor(t.app.identity.clock.now() / 1000));

const createLink = (type: string, app: Record<string, unknown>) => ok(t, tok, 'POST', '/support/outLink/create', { appId, type, name: type, app }) as Promise<string>;

/** A Feishu text message event (schema 2.0) from `openId` in chat `chatId`, verified by `token`. */
const feishuTextEvent = (input: { eventId: string; token: string; appId: string; openId: string; messageId: string; chatId: string; text: string }) => ({
  schema: '2.0',
  header: { event_id: input.eventId, event_type: 'im.message.receive_v1', create_time: '1700000000000', token: input.token, app_id: input.appId, tenant_key: 'tk' },
  event: {
    sender: { sender_id: { open_id: input.openId }, sender_type: 'user', tenant_key: 'tk' },
    message: { message_id: input.messageId, chat_id: input.chatId, chat_type: 'p2p', message_type: 'text', create_time: '1700000000000', content: JSON.stringify({ text: input.text }) },
  },
});

// Each receiver answers at the specification's name and at the path the channel consoles are given.
describe.each(['imA', 'feishu'])('Feishu at /support/outLink/%s/{token}', (path) => {
  it('answers url_verification, checks the token, and replies to a text message through the API', async () => {
    const token = await createLink('feishu', { appId: 'cli_1', appSecret: 'sec', verificationToken: 'vt', apiBaseUrl: `${fake.origin}/feishu` });
    const url = `/api/support/outLink/${path}/${token}`;
    const challenge = await t.app.inject({ method: 'POST', url, headers: feishuHeaders, payload: JSON.stringify({ challenge: 'ch-123', token: 'vt', type: 'url_verification' }) });
    expect(challenge.statusCode, challenge.body).toBe(200);
    expect(challenge.json()).toEqual({ challenge: 'ch-123' });
    expect((await t.app.inject({ method: 'POST', url, headers: feishuHeaders, payload: JSON.stringify({ type: 'url_verification', challenge: 'x', token: 'wrong' }) })).statusCode).toBe(401);
    expect((await t.app.inject({ method: 'POST', url: `/api/support/outLink/${path}/unknown`, headers: feishuHeaders, payload: '{"type":"url_verification"}' })).statusCode).toBe(403);

    const messageId = `om_${path}`;
    const event = {
      schema: '2.0',
      header: { event_id: `ev-${path}`, event_type: 'im.message.receive_v1', create_time: '1700000000000', token: 'vt', app_id: 'cli_1', tenant_key: 'tk' },
      event: {
        sender: { sender_id: { open_id: `ou_${path}`, union_id: 'on_1', user_id: 'u1' }, sender_type: 'user', tenant_key: 'tk' },
        message: { message_id: messageId, chat_id: `oc_${path}`, chat_type: 'p2p', message_type: 'text', create_time: '1700000000000', content: JSON.stringify({ text: 'hello feishu' }) },
      },
    };
    const res = await t.app.inject({ method: 'POST', url, headers: feishuHeaders, payload: JSON.stringify(event) });
    expect(res.statusCode).toBe(200);
    const reply: SeenRequest = await fake.waitFor(`/feishu/open-apis/im/v1/messages/${messageId}/reply`);
    expect(reply.headers.authorization).toBe('Bearer t-feishu');
    expect(reply.body).toEqual({ msg_type: 'text', content: JSON.stringify({ text: 'Echo: hello feishu' }) });
    const tokenCall = fake.requests.find((r) => r.path.endsWith('tenant_access_token/internal'))!;
    expect(tokenCall.body).toEqual({ app_id: 'cli_1', app_secret: 'sec' });
    const chat = await t.app.mongo.db.collection('chats').findOne({ shareId: token });
    // The link is part of the chat id: another link seeing the same chat id has a chat of its own.
    const linkId = (await t.app.mongo.db.collection('outlinks').findOne({ shareId: token }))?._id;
    expect(chat).toMatchObject({ source: 'feishu', outLinkUid: `ou_${path}`, chatId: `feishu-${linkId}-oc_${path}` });
  });

  it('decrypts an encrypted url_verification with the encryptKey', async () => {
    const token = await createLink('feishu', { appId: 'cli_2', appSecret: 'sec', encryptKey: 'ek-secret', verificationToken: 'vt2' });
    const url = `/api/support/outLink/${path}/${token}`;
    const encrypt = feishuEncrypt({ challenge: 'enc-challenge', token: 'vt2', type: 'url_verification' }, 'ek-secret');
    const res = await t.app.inject({ method: 'POST', url, headers: feishuHeaders, payload: JSON.stringify({ encrypt }) });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ challenge: 'enc-challenge' });
    const wrongKey = feishuEncrypt({ challenge: 'x', token: 'vt2', type: 'url_verification' }, 'another-key');
    expect((await t.app.inject({ method: 'POST', url, headers: feishuHeaders, payload: JSON.stringify({ encrypt: wrongKey }) })).statusCode).toBe(401);
  });
});

describe.each(['imC', 'offiaccount'])('WeChat official account at /support/outLink/%s/{token}', (path) => {
  it('verifies the signature, echoes echostr, and sends the answer through the customer-service API', async () => {
    const base = `${fake.origin}/wechat-${path}`;
    const token = await createLink('official_account', { appId: 'wx1', secret: 'wxsecret', CallbackToken: 'cbt', apiBaseUrl: base });
    const url = `/api/support/outLink/${path}/${token}`;
    const q = { timestamp: nowSeconds(), nonce: '1514711092' };
    const signature = sha1(['cbt', q.timestamp, q.nonce]);
    // The console's server check: GET with signature, echostr, timestamp, nonce.
    const verify = await t.app.inject({ method: 'GET', url: `${url}?signature=${signature}&echostr=7165469845376186498&timestamp=${q.timestamp}&nonce=${q.nonce}` });
    expect(verify.statusCode).toBe(200);
    expect(verify.body).toBe('7165469845376186498');
    expect((await t.app.inject({ method: 'GET', url: `${url}?signature=bad&timestamp=1&nonce=2&echostr=x` })).statusCode).toBe(401);

    // A user message: POST text/xml, with the signature and the user's openid in the query.
    const xml = `<xml><ToUserName><![CDATA[gh_1]]></ToUserName><FromUserName><![CDATA[openid-${path}]]></FromUserName><CreateTime>1700000000</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[hello wechat]]></Content><MsgId>24000000000000001</MsgId></xml>`;
    const res = await t.app.inject({
      method: 'POST',
      url: `${url}?signature=${signature}&timestamp=${q.timestamp}&nonce=${q.nonce}&openid=openid-${path}`,
      headers: { 'content-type': 'text/xml', 'user-agent': 'Mozilla/4.0' },
      payload: xml,
    });
    expect(res.body).toBe('success');
    const sent = await fake.waitFor(`/wechat-${path}/cgi-bin/message/custom/send`);
    expect(sent.body).toEqual({ touser: `openid-${path}`, msgtype: 'text', text: { content: 'Echo: hello wechat' } });
    expect(fake.requests.find((r) => r.path === `/wechat-${path}/cgi-bin/token`)).toBeDefined();
  });
});

describe.each(['imB', 'wecom'])('WeCom at /support/outLink/%s/{token}', (path) => {
  it('decrypts the echostr, then decrypts a message and sends the answer through the app-message API', async () => {
    const base = `${fake.origin}/wecom-${path}`;
    const token = await createLink('wecom', { CorpId: 'corp1', SuiteSecret: 'ss', AgentId: '1000002', CallbackToken: 'wct', CallbackEncodingAesKey: AES_KEY, apiBaseUrl: base });
    const url = `/api/support/outLink/${path}/${token}`;
    const echostr = wecomEncrypt('plain-echo', 'corp1');
    const timestamp = nowSeconds();
    const params = (encrypted: string) => new URLSearchParams({ msg_signature: sha1(['wct', timestamp, 'n2', encrypted]), timestamp, nonce: 'n2' });
    // The console's URL check: GET with msg_signature, timestamp, nonce and the encrypted echostr.
    const verify = await t.app.inject({ method: 'GET', url: `${url}?${params(echostr)}&echostr=${encodeURIComponent(echostr)}` });
    expect(verify.statusCode, verify.body).toBe(200);
    expect(verify.body).toBe('plain-echo');
    const badSig = await t.app.inject({ method: 'GET', url: `${url}?msg_signature=00&timestamp=${timestamp}&nonce=n2&echostr=${encodeURIComponent(echostr)}` });
    expect(badSig.statusCode).toBe(401);

    const inner = `<xml><ToUserName><![CDATA[corp1]]></ToUserName><FromUserName><![CDATA[zhangsan-${path}]]></FromUserName><CreateTime>1700</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[hello wecom]]></Content><MsgId>9</MsgId><AgentID>1000002</AgentID></xml>`;
    const encrypted = wecomEncrypt(inner, 'corp1');
    const res = await t.app.inject({
      method: 'POST',
      url: `${url}?${params(encrypted)}`,
      headers: { 'content-type': 'text/xml' },
      payload: `<xml><ToUserName><![CDATA[corp1]]></ToUserName><Encrypt><![CDATA[${encrypted}]]></Encrypt><AgentID><![CDATA[1000002]]></AgentID></xml>`,
    });
    expect(res.statusCode, res.body).toBe(200);
    const sent = await fake.waitFor(`/wecom-${path}/cgi-bin/message/send`);
    expect(sent.body).toEqual({ touser: `zhangsan-${path}`, msgtype: 'text', agentid: '1000002', text: { content: 'Echo: hello wecom' } });
    expect(fake.requests.find((r) => r.path === `/wecom-${path}/cgi-bin/gettoken`)).toBeDefined();
  });
});

describe('secrets of a channel stay out of the logs', () => {
  it('a failed provider call is logged by host and path, without its query (corpsecret) or the link token', async () => {
    const token = await createLink('wecom', { CorpId: 'corp9', SuiteSecret: 'suite-secret-value', AgentId: '1000009', CallbackToken: 'wct', CallbackEncodingAesKey: AES_KEY, apiBaseUrl: `${fake.origin}/nowhere` });
    const inner = '<xml><ToUserName><![CDATA[corp9]]></ToUserName><FromUserName><![CDATA[lisi]]></FromUserName><CreateTime>1700</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[hi]]></Content><MsgId>19</MsgId><AgentID>1000009</AgentID></xml>';
    const encrypted = wecomEncrypt(inner, 'corp9');
    const timestamp = nowSeconds();
    const params = new URLSearchParams({ msg_signature: sha1(['wct', timestamp, 'n9', encrypted]), timestamp, nonce: 'n9' });
    const res = await t.app.inject({
      method: 'POST',
      url: `/api/support/outLink/wecom/${token}?${params}`,
      headers: { 'content-type': 'text/xml' },
      payload: `<xml><ToUserName><![CDATA[corp9]]></ToUserName><Encrypt><![CDATA[${encrypted}]]></Encrypt><AgentID><![CDATA[1000009]]></AgentID></xml>`,
    });
    expect(res.statusCode, res.body).toBe(200);
    for (let i = 0; i < 100 && !t.logs().includes('messaging channel delivery failed'); i++) await new Promise((resolve) => setTimeout(resolve, 50));
    const logs = t.logs();
    expect(logs).toContain('/nowhere/cgi-bin/gettoken answered HTTP 404');
    expect(logs).not.toContain('suite-secret-value');
    expect(logs).not.toContain(token);
  });
});

describe('channel chats belong to their link', () => {
  it('the same WeCom user id on two links of one app talks in two chats', async () => {
    const send = async (token: string, corp: string, nonce: string) => {
      const inner = `<xml><ToUserName><![CDATA[${corp}]]></ToUserName><FromUserName><![CDATA[ZhangSan]]></FromUserName><CreateTime>1700</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[hello from ${corp}]]></Content><MsgId>${nonce}</MsgId><AgentID>1000002</AgentID></xml>`;
      const encrypted = wecomEncrypt(inner, corp);
      const timestamp = nowSeconds();
      const params = new URLSearchParams({ msg_signature: sha1(['wct', timestamp, nonce, encrypted]), timestamp, nonce });
      const res = await t.app.inject({
        method: 'POST',
        url: `/api/support/outLink/wecom/${token}?${params}`,
        headers: { 'content-type': 'text/xml' },
        payload: `<xml><ToUserName><![CDATA[${corp}]]></ToUserName><Encrypt><![CDATA[${encrypted}]]></Encrypt><AgentID><![CDATA[1000002]]></AgentID></xml>`,
      });
      expect(res.statusCode, res.body).toBe(200);
    };
    const base = `${fake.origin}/wecom-wecom`;
    const first = await createLink('wecom', { CorpId: 'corpA', SuiteSecret: 'sa', AgentId: '1000002', CallbackToken: 'wct', CallbackEncodingAesKey: AES_KEY, apiBaseUrl: base });
    const second = await createLink('wecom', { CorpId: 'corpB', SuiteSecret: 'sb', AgentId: '1000002', CallbackToken: 'wct', CallbackEncodingAesKey: AES_KEY, apiBaseUrl: base });
    await send(first, 'corpA', 'na1');
    await send(second, 'corpB', 'nb1');
    const chats = t.app.mongo.db.collection('chats');
    await expect.poll(async () => (await chats.find({ outLinkUid: 'ZhangSan' }).toArray()).length).toBe(2);
    const found = await chats.find({ outLinkUid: 'ZhangSan' }).toArray();
    expect(new Set(found.map((c) => c.shareId))).toEqual(new Set([first, second]));
    // Each chat holds its own link's conversation only (its items are written just after the chat).
    for (const c of found) {
      const questions = async () => (await t.app.mongo.db.collection('chatitems').find({ chatId: c.chatId, obj: 'Human' }).toArray()).map((item) => item.value[0].text.content);
      await expect.poll(questions).toEqual([`hello from ${c.shareId === first ? 'corpA' : 'corpB'}`]);
    }
  });
});

describe('WeCom crypto input', () => {
  it('a malformed EncodingAESKey is a 400 naming it; a signed message that does not decrypt is refused, not a 500', async () => {
    const bad = await t.app.inject({ method: 'POST', url: '/api/support/outLink/create', headers: { token: tok }, payload: { appId, type: 'wecom', name: 'bad key', app: { CorpId: 'c', CallbackToken: 'wct', CallbackEncodingAesKey: 'not-a-key' } } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().message).toContain('CallbackEncodingAesKey');
    const token = await createLink('wecom', { CorpId: 'corpZ', SuiteSecret: 's', AgentId: '1', CallbackToken: 'wct', CallbackEncodingAesKey: AES_KEY, apiBaseUrl: `${fake.origin}/wecom-wecom` });
    for (const garbage of ['AAAA', 'not base64 at all', Buffer.alloc(48, 7).toString('base64')]) {
      const timestamp = nowSeconds();
      const params = new URLSearchParams({ msg_signature: sha1(['wct', timestamp, 'nz', garbage]), timestamp, nonce: 'nz', echostr: garbage });
      const res = await t.app.inject({ method: 'GET', url: `/api/support/outLink/wecom/${token}?${params}` });
      expect(res.statusCode, `${garbage}: ${res.body}`).toBeGreaterThanOrEqual(400);
      expect(res.statusCode, res.body).toBeLessThan(500);
    }
  });
});

describe('deliveries across processes and shutdowns', () => {
  const feishuEvent = (eventId: string, messageId: string, text: string) => ({
    schema: '2.0',
    header: { event_id: eventId, event_type: 'im.message.receive_v1', create_time: '1700000000000', token: 'vt', app_id: 'cli_9', tenant_key: 'tk' },
    event: {
      sender: { sender_id: { open_id: 'ou_twice' }, sender_type: 'user', tenant_key: 'tk' },
      message: { message_id: messageId, chat_id: 'oc_twice', chat_type: 'p2p', message_type: 'text', create_time: '1700000000000', content: JSON.stringify({ text }) },
    },
  });
  const replicaOf = () => buildReplica(t, { MODEL_CONFIG_PATH: t.config.MODEL_CONFIG_PATH as string, SSRF_ALLOW_PRIVATE: 'true' });

  // The claim's insert landed and its answer was lost: the delivery failed (5xx), and the
  // channel's redelivery found the claim and took the message for a repeat, never answered.
  it('a claim whose insert landed but whose answer was lost is this delivery’s, and the message is answered', async () => {
    const token = await createLink('feishu', { appId: 'cli_9', appSecret: 'sec', verificationToken: 'vt', apiBaseUrl: `${fake.origin}/feishu` });
    fake.route('POST', '/feishu/open-apis/im/v1/messages/om_lost/reply', () => ({ json: { code: 0 } }));
    const insertOne = Collection.prototype.insertOne;
    let armed = true;
    Collection.prototype.insertOne = async function (this: Collection, ...args: Parameters<typeof insertOne>) {
      const result = await insertOne.apply(this, args);
      if (armed && this.collectionName === 'outlink_channel_events') {
        armed = false;
        throw new Error('connection reset');
      }
      return result;
    } as typeof insertOne;
    try {
      const payload = JSON.stringify(feishuEvent('ev-lost', 'om_lost', 'are you there'));
      const res = await t.app.inject({ method: 'POST', url: `/api/support/outLink/feishu/${token}`, headers: feishuHeaders, payload });
      expect(res.statusCode, res.body).toBe(200);
    } finally {
      Collection.prototype.insertOne = insertOne;
    }
    const reply = await fake.waitFor('/feishu/open-apis/im/v1/messages/om_lost/reply');
    expect(reply.body).toEqual({ msg_type: 'text', content: JSON.stringify({ text: 'Echo: are you there' }) });
  });

  it('a message Feishu delivers again to another process runs one turn and gets one reply', async () => {
    const token = await createLink('feishu', { appId: 'cli_9', appSecret: 'sec', verificationToken: 'vt', apiBaseUrl: `${fake.origin}/feishu` });
    fake.route('POST', '/feishu/open-apis/im/v1/messages/om_twice/reply', () => ({ json: { code: 0 } }));
    const [first, second] = [await replicaOf(), await replicaOf()];
    const payload = JSON.stringify(feishuEvent('ev-twice', 'om_twice', 'only once'));
    const url = `/api/support/outLink/feishu/${token}`;
    expect((await first.app.inject({ method: 'POST', url, headers: feishuHeaders, payload })).statusCode).toBe(200);
    expect((await second.app.inject({ method: 'POST', url, headers: feishuHeaders, payload })).statusCode).toBe(200);
    // Closing a process waits for the turns it started: then every reply there will be is sent.
    await first.close();
    await second.close();
    expect(fake.requests.filter((r) => r.path === '/feishu/open-apis/im/v1/messages/om_twice/reply')).toHaveLength(1);
  });

  it('a shutdown lets a running channel turn send its answer before the database closes', async () => {
    const token = await createLink('feishu', { appId: 'cli_9', appSecret: 'sec', verificationToken: 'vt', apiBaseUrl: `${fake.origin}/feishu` });
    fake.route('POST', '/feishu/open-apis/im/v1/messages/om_slow/reply', () => ({ json: { code: 0 } }));
    const replica = await replicaOf();
    const payload = JSON.stringify(feishuEvent('ev-slow', 'om_slow', 'take your time'));
    expect((await replica.app.inject({ method: 'POST', url: `/api/support/outLink/feishu/${token}`, headers: feishuHeaders, payload })).statusCode).toBe(200);
    await replica.close();
    const reply = fake.requests.find((r) => r.path === '/feishu/open-apis/im/v1/messages/om_slow/reply');
    expect(reply?.body).toEqual({ msg_type: 'text', content: JSON.stringify({ text: 'Echo: take your time' }) });
  });
});

describe('a channel turn that fails unexpectedly', () => {
  it('tells the channel user only that the app could not answer, and logs the error', async () => {
    const token = await createLink('feishu', { appId: 'cli_2', appSecret: 'sec', verificationToken: 'vt2', apiBaseUrl: `${fake.origin}/feishu` });
    fake.route('POST', '/feishu/open-apis/im/v1/messages/om_broken/reply', () => ({ json: { code: 0 } }));
    const run = t.app.chat.run;
    const runTurn = run.runTurn;
    // A fault inside the service (a bug, a database error): its text names internals.
    run.runTurn = async () => {
      throw new Error('cannot reach mongodb://internal-db.example:27017');
    };
    try {
      const event = feishuTextEvent({ eventId: 'ev-broken', token: 'vt2', appId: 'cli_2', openId: 'ou_broken', messageId: 'om_broken', chatId: 'oc_broken', text: 'hello' });
      const res = await t.app.inject({ method: 'POST', url: `/api/support/outLink/feishu/${token}`, headers: feishuHeaders, payload: JSON.stringify(event) });
      expect(res.statusCode).toBe(200);
      const reply: SeenRequest = await fake.waitFor('/feishu/open-apis/im/v1/messages/om_broken/reply');
      expect(reply.body).toEqual({ msg_type: 'text', content: JSON.stringify({ text: 'Sorry, the app could not answer right now.' }) });
      expect(t.logs()).toContain('messaging channel turn failed');
      expect(t.logs()).toContain('internal-db.example');
    } finally {
      run.runTurn = runTurn;
    }
  });
});

describe('a channel conversation writes only into its own chat', () => {
  it('a chat of the channel id started elsewhere (through the web) receives nothing from the channel', async () => {
    const token = await createLink('feishu', { appId: 'cli_3', appSecret: 'sec', verificationToken: 'vt3', apiBaseUrl: `${fake.origin}/feishu` });
    fake.route('POST', '/feishu/open-apis/im/v1/messages/om_planted/reply', () => ({ json: { code: 0 } }));
    const link = await t.app.mongo.db.collection('outlinks').findOne({ shareId: token });
    const plantedId = `feishu-${link!._id}-oc_planted`;
    // A member who learnt the link's id starts that chat through the web first.
    const planted = await t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: authHeaders(tok), payload: { appId, chatId: plantedId, messages: [{ role: 'user', content: 'planted' }] } });
    expect(planted.statusCode, planted.body).toBe(200);
    const event = feishuTextEvent({ eventId: 'ev-planted', token: 'vt3', appId: 'cli_3', openId: 'ou_victim', messageId: 'om_planted', chatId: 'oc_planted', text: 'my private message' });
    expect((await t.app.inject({ method: 'POST', url: `/api/support/outLink/feishu/${token}`, headers: feishuHeaders, payload: JSON.stringify(event) })).statusCode).toBe(200);
    const reply: SeenRequest = await fake.waitFor('/feishu/open-apis/im/v1/messages/om_planted/reply');
    // The conversation goes on in a chat of its own whose id nobody without the link's shareId can make.
    expect(reply.body).toEqual({ msg_type: 'text', content: JSON.stringify({ text: 'Echo: my private message' }) });
    const items = await t.app.mongo.db.collection('chatitems').find({ chatId: plantedId }).toArray();
    expect(JSON.stringify(items)).not.toContain('my private message');
    expect(items).toHaveLength(2);
  });
});
