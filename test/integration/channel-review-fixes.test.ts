/**
 * Messaging channels: a WeChat/WeCom body cannot buy CPU before its signature is checked; every
 * member of a Feishu group is answered, and no refusal names internal ids; a chat planted under a
 * channel conversation's id does not lock it out; access tokens are kept between sends; WeChat's
 * safe mode (encrypted messages) is answered, and what cannot be read is refused, not dropped.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Errors } from '../../src/infra/errors.js';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi, SeenRequest } from '../helpers/fake-openai.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { ok } from './apps-helpers.js';
import { AES_KEY, sha1, wecomEncrypt } from './channel-helpers.js';
import { createPublishedApp, simpleChatGraph, startChatApp } from './chat-helpers.js';

let t: TestApp;
let fake: FakeOpenAi;
let tok: string;
let appId: string;
const feishuHeaders = { 'content-type': 'application/json; charset=utf-8', 'x-lark-request-timestamp': '1700000000', 'x-lark-request-nonce': '12345' };

beforeAll(async () => {
  ({ t, fake } = await startChatApp());
  await createUser(t, { username: 'chan-fix', password: 'password-i1' });
  tok = await login(t, 'chan-fix', 'password-i1');
  appId = await createPublishedApp(t, tok, 'Channel bot', simpleChatGraph);
  fake.route('POST', '/feishu/open-apis/auth/v3/tenant_access_token/internal', () => ({ json: { code: 0, tenant_access_token: 't-feishu', expire: 7200 } }));
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

const createLink = (type: string, app: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  ok(t, tok, 'POST', '/support/outLink/create', { appId, type, name: type, app, ...extra }) as Promise<string>;
const nowSeconds = () => String(Math.floor(t.app.identity.clock.now() / 1000));
const seen = (path: string) => fake.requests.filter((r) => r.path === path);
/** Waits (up to ~10 s) until `path` was called `count` times; the test then checks what came. */
async function calls(path: string, count: number): Promise<SeenRequest[]> {
  for (let i = 0; i < 200 && seen(path).length < count; i++) await new Promise((resolve) => setTimeout(resolve, 50));
  return seen(path);
}
const textOf = (request: SeenRequest) => JSON.parse((request.body as { content: string }).content).text as string;

const feishuGroupEvent = (n: string, openId: string, chatId: string) => ({
  schema: '2.0',
  header: { event_id: `ev-${n}`, event_type: 'im.message.receive_v1', create_time: '1700000000000', token: 'vt', app_id: 'cli_g', tenant_key: 'tk' },
  event: {
    sender: { sender_id: { open_id: openId }, sender_type: 'user', tenant_key: 'tk' },
    message: { message_id: `om_${n}`, chat_id: chatId, chat_type: 'group', message_type: 'text', create_time: '1700000000000', content: JSON.stringify({ text: `@_user_1 hi ${n}` }) },
  },
});

describe('WeChat/WeCom bodies before the signature check', () => {
  it('a 1 MB body of unclosed CDATA openers is refused 413 by its size; under the cap, the unsigned body gets its 401', async () => {
    const token = await createLink('wecom', { CorpId: 'corp1', SuiteSecret: 'ss', AgentId: '1', CallbackToken: 'wct', CallbackEncodingAesKey: AES_KEY });
    const url = `/api/support/outLink/wecom/${token}?msg_signature=x&timestamp=1&nonce=1`;
    const big = await t.app.inject({ method: 'POST', url, headers: { 'content-type': 'text/xml' }, payload: '<a><![CDATA['.repeat(87_000) });
    expect(big.statusCode, big.body).toBe(413);
    expect(big.json().message).toMatch(/at most 65536 bytes/);
    const wechat = await createLink('official_account', { appId: 'wx1', secret: 's', CallbackToken: 'cbt' });
    const bigWechat = await t.app.inject({ method: 'POST', url: `/api/support/outLink/offiaccount/${wechat}?signature=x`, headers: { 'content-type': 'application/xml' }, payload: 'x'.repeat(70_000) });
    expect(bigWechat.statusCode).toBe(413);
    // Just under the cap: read only for its <Encrypt> (none), and refused by the signature.
    const small = await t.app.inject({ method: 'POST', url, headers: { 'content-type': 'text/xml' }, payload: '<a><![CDATA['.repeat(5_000) });
    expect(small.statusCode, small.body).toBe(401);
    expect(small.json().message).toBe('The message signature does not match');
  });
});

describe('Feishu group chats', () => {
  it('answers every member of a group, in one chat the group owns', async () => {
    const token = await createLink('feishu', { appId: 'cli_g', appSecret: 'sec', verificationToken: 'vt', apiBaseUrl: `${fake.origin}/feishu` });
    const url = `/api/support/outLink/feishu/${token}`;
    for (const [n, who] of [
      ['g1', 'ou_alice'],
      ['g2', 'ou_bob'],
    ]) {
      fake.route('POST', `/feishu/open-apis/im/v1/messages/om_${n}/reply`, () => ({ json: { code: 0 } }));
      const res = await t.app.inject({ method: 'POST', url, headers: feishuHeaders, payload: JSON.stringify(feishuGroupEvent(n!, who!, 'oc_group')) });
      expect(res.statusCode).toBe(200);
      const [reply] = await calls(`/feishu/open-apis/im/v1/messages/om_${n}/reply`, 1);
      expect(textOf(reply!)).toBe(`Echo: hi ${n}`);
    }
    const chats = await t.app.mongo.db.collection('chats').find({ shareId: token }).toArray();
    expect(chats).toHaveLength(1);
    expect(chats[0]).toMatchObject({ source: 'feishu', outLinkUid: 'oc_group' });
    const items = await t.app.mongo.db.collection('chatitems').find({ chatId: chats[0]!.chatId }).toArray();
    expect(items).toHaveLength(4);
    // One Feishu tenant token served both replies (kept between sends).
    expect(seen('/feishu/open-apis/auth/v3/tenant_access_token/internal')).toHaveLength(1);
  });

  it('a refusal posted to the channel names no internal id (link, chat or user id)', async () => {
    const token = await createLink('feishu', { appId: 'cli_r', appSecret: 'sec', verificationToken: 'vt', apiBaseUrl: `${fake.origin}/feishu` });
    const linkId = String((await t.app.mongo.db.collection('outlinks').findOne({ shareId: token }))?._id);
    fake.route('POST', '/feishu/open-apis/im/v1/messages/om_r1/reply', () => ({ json: { code: 0 } }));
    fake.route('POST', '/feishu/open-apis/im/v1/messages/om_r2/reply', () => ({ json: { code: 0 } }));
    const run = t.app.chat.run;
    const runTurn = run.runTurn;
    try {
      run.runTurn = async (input) => {
        throw Errors.linkUnInvalid(`Link ${linkId} cannot run chat ${input.chatId}`);
      };
      await t.app.inject({ method: 'POST', url: `/api/support/outLink/feishu/${token}`, headers: feishuHeaders, payload: JSON.stringify(feishuGroupEvent('r1', 'ou_carol', 'oc_secret_group')) });
      const [first] = await calls('/feishu/open-apis/im/v1/messages/om_r1/reply', 1);
      run.runTurn = async (input) => {
        throw Errors.unAuthChat(`Chat ${input.chatId} belongs to someone else`);
      };
      await t.app.inject({ method: 'POST', url: `/api/support/outLink/feishu/${token}`, headers: feishuHeaders, payload: JSON.stringify(feishuGroupEvent('r2', 'ou_carol', 'oc_secret_group')) });
      const [second] = await calls('/feishu/open-apis/im/v1/messages/om_r2/reply', 1);
      expect(textOf(first!)).toBe('Sorry, the app could not answer: Link … cannot run chat …');
      expect(textOf(second!)).toBe('Sorry, the app could not answer: this conversation cannot be answered here.');
      for (const reply of [first!, second!]) {
        expect(textOf(reply)).not.toContain(linkId);
        expect(textOf(reply)).not.toContain('oc_secret_group');
      }
    } finally {
      run.runTurn = runTurn;
    }
  });

  it('a chat planted under the conversation’s id (through the web) neither receives its messages nor locks it out', async () => {
    const token = await createLink('feishu', { appId: 'cli_p', appSecret: 'sec', verificationToken: 'vt', apiBaseUrl: `${fake.origin}/feishu` });
    const link = await t.app.mongo.db.collection('outlinks').findOne({ shareId: token });
    const plantedId = `feishu-${link!._id}-oc_planted`;
    const planted = await t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: authHeaders(tok), payload: { appId, chatId: plantedId, messages: [{ role: 'user', content: 'planted' }] } });
    expect(planted.statusCode, planted.body).toBe(200);
    for (const n of ['p1', 'p2']) {
      fake.route('POST', `/feishu/open-apis/im/v1/messages/om_${n}/reply`, () => ({ json: { code: 0 } }));
      const event = feishuGroupEvent(n, 'ou_victim', 'oc_planted');
      expect((await t.app.inject({ method: 'POST', url: `/api/support/outLink/feishu/${token}`, headers: feishuHeaders, payload: JSON.stringify(event) })).statusCode).toBe(200);
      const [reply] = await calls(`/feishu/open-apis/im/v1/messages/om_${n}/reply`, 1);
      expect(textOf(reply!)).toBe(`Echo: hi ${n}`);
    }
    expect(await t.app.mongo.db.collection('chatitems').countDocuments({ chatId: plantedId })).toBe(2);
    const own = await t.app.mongo.db.collection('chats').findOne({ shareId: token });
    expect(own?.chatId).toMatch(new RegExp(`^${plantedId}-[A-Za-z0-9_-]{22}$`));
    expect(await t.app.mongo.db.collection('chatitems').countDocuments({ chatId: own?.chatId })).toBe(4);
  });
});

describe('access tokens are kept between sends', () => {
  const wechatMessage = async (token: string, id: string) => {
    const ts = nowSeconds();
    const q = new URLSearchParams({ signature: sha1(['cbt', ts, `n${id}`]), timestamp: ts, nonce: `n${id}` });
    const xml = `<xml><ToUserName>gh</ToUserName><FromUserName>o1</FromUserName><CreateTime>1</CreateTime><MsgType>text</MsgType><Content>hi ${id}</Content><MsgId>${id}</MsgId></xml>`;
    const res = await t.app.inject({ method: 'POST', url: `/api/support/outLink/offiaccount/${token}?${q}`, headers: { 'content-type': 'text/xml' }, payload: xml });
    expect(res.body).toBe('success');
  };

  it('WeChat: two messages with an immediate response (four sends) take one token', async () => {
    let issued = 0;
    fake.route('GET', '/wx-a/cgi-bin/token', () => ({ json: { access_token: `wx-${++issued}`, expires_in: 7200 } }));
    fake.route('POST', '/wx-a/cgi-bin/message/custom/send', () => ({ json: { errcode: 0, errmsg: 'ok' } }));
    const token = await createLink('official_account', { appId: 'wxa', secret: 's', CallbackToken: 'cbt', apiBaseUrl: `${fake.origin}/wx-a` }, { immediateResponse: 'thinking…' });
    await wechatMessage(token, '101');
    await calls('/wx-a/cgi-bin/message/custom/send', 2);
    await wechatMessage(token, '102');
    expect(await calls('/wx-a/cgi-bin/message/custom/send', 4)).toHaveLength(4);
    expect(seen('/wx-a/cgi-bin/token')).toHaveLength(1);
    // Kept for the deployment, without the secret.
    const stored = await t.app.mongo.db.collection('outlink_channel_tokens').find().toArray();
    expect(JSON.stringify(stored)).toContain('wx-1');
  });

  it('WeChat: a token the API calls expired (42001) is dropped, a new one taken, and the send made once more', async () => {
    let issued = 0;
    let sends = 0;
    fake.route('GET', '/wx-b/cgi-bin/token', () => ({ json: { access_token: `wxb-${++issued}`, expires_in: 7200 } }));
    fake.route('POST', '/wx-b/cgi-bin/message/custom/send', () => ({ json: ++sends === 2 ? { errcode: 42001, errmsg: 'access_token expired' } : { errcode: 0 } }));
    const token = await createLink('official_account', { appId: 'wxb', secret: 's', CallbackToken: 'cbt', apiBaseUrl: `${fake.origin}/wx-b` });
    await wechatMessage(token, '201');
    await calls('/wx-b/cgi-bin/message/custom/send', 1);
    await wechatMessage(token, '202');
    const sent = await calls('/wx-b/cgi-bin/message/custom/send', 3);
    expect(sent.map((r) => (r.body as { text: { content: string } }).text.content)).toEqual(['Echo: hi 201', 'Echo: hi 202', 'Echo: hi 202']);
    expect(seen('/wx-b/cgi-bin/token')).toHaveLength(2);
    const stored = await t.app.mongo.db.collection('outlink_channel_tokens').find().toArray();
    expect(JSON.stringify(stored)).toContain('wxb-2');
    expect(JSON.stringify(stored)).not.toContain('wxb-1');
  });

  it('WeCom: messages share one token; an invalid one (40001) is replaced once', async () => {
    let issued = 0;
    let sends = 0;
    fake.route('GET', '/wc/cgi-bin/gettoken', () => ({ json: { errcode: 0, access_token: `wc-${++issued}`, expires_in: 7200 } }));
    fake.route('POST', '/wc/cgi-bin/message/send', () => ({ json: ++sends === 3 ? { errcode: 40001, errmsg: 'invalid credential' } : { errcode: 0 } }));
    const token = await createLink('wecom', { CorpId: 'corpT', SuiteSecret: 'ss', AgentId: '1', CallbackToken: 'wct', CallbackEncodingAesKey: AES_KEY, apiBaseUrl: `${fake.origin}/wc` });
    for (const [i, id] of ['31', '32', '33'].entries()) {
      const timestamp = nowSeconds();
      const inner = `<xml><ToUserName><![CDATA[corpT]]></ToUserName><FromUserName><![CDATA[u1]]></FromUserName><CreateTime>1</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[m${id}]]></Content><MsgId>${id}</MsgId></xml>`;
      const encrypted = wecomEncrypt(inner, 'corpT');
      const q = new URLSearchParams({ msg_signature: sha1(['wct', timestamp, `n${id}`, encrypted]), timestamp, nonce: `n${id}` });
      const res = await t.app.inject({ method: 'POST', url: `/api/support/outLink/wecom/${token}?${q}`, headers: { 'content-type': 'text/xml' }, payload: `<xml><Encrypt><![CDATA[${encrypted}]]></Encrypt></xml>` });
      expect(res.statusCode, res.body).toBe(200);
      await calls('/wc/cgi-bin/message/send', i === 2 ? 4 : i + 1);
    }
    expect(seen('/wc/cgi-bin/message/send').map((r) => (r.body as { text: { content: string } }).text.content)).toEqual(['Echo: m31', 'Echo: m32', 'Echo: m33', 'Echo: m33']);
    expect(seen('/wc/cgi-bin/gettoken')).toHaveLength(2);
  });
});

describe('WeChat safe mode (CallbackEncodingAesKey)', () => {
  const inner = (id: string) =>
    `<xml><ToUserName><![CDATA[gh_1]]></ToUserName><FromUserName><![CDATA[o-safe]]></FromUserName><CreateTime>1</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[safe ${id}]]></Content><MsgId>${id}</MsgId></xml>`;
  const post = (token: string, query: Record<string, string>, payload: string) =>
    t.app.inject({ method: 'POST', url: `/api/support/outLink/offiaccount/${token}?${new URLSearchParams(query)}`, headers: { 'content-type': 'text/xml' }, payload });

  it('decrypts an encrypted message signed with msg_signature and answers it', async () => {
    fake.route('GET', '/wx-s/cgi-bin/token', () => ({ json: { access_token: 'wxs', expires_in: 7200 } }));
    fake.route('POST', '/wx-s/cgi-bin/message/custom/send', () => ({ json: { errcode: 0 } }));
    const token = await createLink('official_account', { appId: 'wxS', secret: 's', CallbackToken: 'cbt', CallbackEncodingAesKey: AES_KEY, apiBaseUrl: `${fake.origin}/wx-s` });
    const ts = nowSeconds();
    const enc = wecomEncrypt(inner('71'), 'wxS');
    const query = { signature: sha1(['cbt', ts, 'n1']), timestamp: ts, nonce: 'n1', openid: 'o-safe', encrypt_type: 'aes', msg_signature: sha1(['cbt', ts, 'n1', enc]) };
    const res = await post(token, query, `<xml><ToUserName><![CDATA[gh_1]]></ToUserName><Encrypt><![CDATA[${enc}]]></Encrypt></xml>`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).toBe('success');
    const [sent] = await calls('/wx-s/cgi-bin/message/custom/send', 1);
    expect(sent?.body).toEqual({ touser: 'o-safe', msgtype: 'text', text: { content: 'Echo: safe 71' } });

    // The ciphertext signed for another body, or sent to another account, is refused.
    const other = wecomEncrypt(inner('72'), 'wxS');
    expect((await post(token, { ...query, msg_signature: sha1(['cbt', ts, 'n1', enc]) }, `<xml><Encrypt><![CDATA[${other}]]></Encrypt></xml>`)).statusCode).toBe(401);
    const elsewhere = wecomEncrypt(inner('73'), 'wxOther');
    const wrongAccount = await post(token, { ...query, msg_signature: sha1(['cbt', ts, 'n1', elsewhere]) }, `<xml><Encrypt><![CDATA[${elsewhere}]]></Encrypt></xml>`);
    expect(wrongAccount.statusCode).toBe(401);
    // A plaintext body on a keyed link proves nothing: refused, and logged.
    const plain = await post(token, { signature: sha1(['cbt', ts, 'n2']), timestamp: ts, nonce: 'n2' }, inner('74'));
    expect(plain.statusCode).toBe(401);
    expect(plain.json().message).toMatch(/safe mode/);
    expect(t.logs()).toContain('WeChat plaintext message refused');
    expect(seen('/wx-s/cgi-bin/message/custom/send')).toHaveLength(1);
  });

  it('an encrypted message to a link without the key, or a body that is no message, is refused (not acknowledged and dropped)', async () => {
    const token = await createLink('official_account', { appId: 'wxN', secret: 's', CallbackToken: 'cbt' });
    const ts = nowSeconds();
    const enc = wecomEncrypt(inner('81'), 'wxN');
    const encrypted = await post(token, { signature: sha1(['cbt', ts, 'n1']), timestamp: ts, nonce: 'n1', encrypt_type: 'aes', msg_signature: sha1(['cbt', ts, 'n1', enc]) }, `<xml><Encrypt><![CDATA[${enc}]]></Encrypt></xml>`);
    expect(encrypted.statusCode).toBe(401);
    expect(encrypted.json().message).toMatch(/CallbackEncodingAesKey/);
    expect(t.logs()).toContain('WeChat safe-mode message refused');
    const notAMessage = await post(token, { signature: sha1(['cbt', ts, 'n2']), timestamp: ts, nonce: 'n2' }, '<xml><ToUserName>gh</ToUserName></xml>');
    expect(notAMessage.statusCode).toBe(400);
    expect(notAMessage.json().message).toMatch(/MsgType/);
    // Events and other kinds of messages are acknowledged, as before.
    const event = await post(token, { signature: sha1(['cbt', ts, 'n3']), timestamp: ts, nonce: 'n3' }, '<xml><FromUserName>o</FromUserName><MsgType>event</MsgType><Event>subscribe</Event></xml>');
    expect(event.body).toBe('success');
    expect(await t.app.mongo.db.collection('outlink_channel_events').countDocuments({ 'message.uid': 'o-safe', 'message.text': 'safe 81' })).toBe(0);
  });
});
