import { createCipheriv, createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi, SeenRequest } from '../helpers/fake-openai.js';
import { createUser, login } from '../helpers/platform.js';
import { ok } from './apps-helpers.js';
import { createPublishedApp, simpleChatGraph, startChatApp } from './chat-helpers.js';

let t: TestApp;
let fake: FakeOpenAi;
let tok: string;
let appId: string;

const sha1 = (parts: string[]) => createHash('sha1').update([...parts].sort().join('')).digest('hex');
const AES_KEY = 'abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG';

/** What the WeCom server does: random16 + length + message + corpId, PKCS#7 to 32, AES-256-CBC. */
function wecomEncrypt(message: string, corpId: string): string {
  const key = Buffer.from(`${AES_KEY}=`, 'base64');
  const body = Buffer.from(message);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(body.length);
  let plain = Buffer.concat([randomBytes(16), length, body, Buffer.from(corpId)]);
  const pad = 32 - (plain.length % 32);
  plain = Buffer.concat([plain, Buffer.alloc(pad, pad)]);
  const cipher = createCipheriv('aes-256-cbc', key, key.subarray(0, 16));
  cipher.setAutoPadding(false);
  return Buffer.concat([cipher.update(plain), cipher.final()]).toString('base64');
}

beforeAll(async () => {
  ({ t, fake } = await startChatApp());
  await createUser(t, { username: 'im-owner', password: 'password-i1' });
  tok = await login(t, 'im-owner', 'password-i1');
  appId = await createPublishedApp(t, tok, 'Channel bot', simpleChatGraph);
  fake.route('POST', '/feishu/open-apis/auth/v3/tenant_access_token/internal', () => ({ json: { code: 0, tenant_access_token: 't-feishu' } }));
  fake.route('POST', '/feishu/open-apis/im/v1/messages/om_1/reply', () => ({ json: { code: 0 } }));
  fake.route('GET', '/wechat/cgi-bin/token', () => ({ json: { access_token: 'wx-token', expires_in: 7200 } }));
  fake.route('POST', '/wechat/cgi-bin/message/custom/send', () => ({ json: { errcode: 0 } }));
  fake.route('GET', '/wecom/cgi-bin/gettoken', () => ({ json: { errcode: 0, access_token: 'wecom-token' } }));
  fake.route('POST', '/wecom/cgi-bin/message/send', () => ({ json: { errcode: 0 } }));
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

const createLink = (type: string, app: Record<string, unknown>) => ok(t, tok, 'POST', '/support/outLink/create', { appId, type, name: type, app }) as Promise<string>;

describe('imA (Feishu)', () => {
  it('answers url_verification, checks the token, and replies to a text message through the API', async () => {
    const token = await createLink('feishu', { appId: 'cli_1', appSecret: 'sec', verificationToken: 'vt', apiBaseUrl: `${fake.origin}/feishu` });
    const url = `/api/support/outLink/imA/${token}`;
    const challenge = await t.app.inject({ method: 'POST', url, payload: { type: 'url_verification', challenge: 'ch-123', token: 'vt' } });
    expect(challenge.json()).toEqual({ challenge: 'ch-123' });
    expect((await t.app.inject({ method: 'POST', url, payload: { type: 'url_verification', challenge: 'x', token: 'wrong' } })).statusCode).toBe(401);
    expect((await t.app.inject({ method: 'POST', url: '/api/support/outLink/imA/unknown', payload: { type: 'url_verification' } })).statusCode).toBe(403);

    const event = {
      schema: '2.0',
      header: { event_id: 'ev1', event_type: 'im.message.receive_v1', token: 'vt' },
      event: { sender: { sender_id: { open_id: 'ou_1' } }, message: { message_id: 'om_1', chat_id: 'oc_1', message_type: 'text', content: JSON.stringify({ text: 'hello feishu' }) } },
    };
    const res = await t.app.inject({ method: 'POST', url, payload: event });
    expect(res.statusCode).toBe(200);
    const reply: SeenRequest = await fake.waitFor('/feishu/open-apis/im/v1/messages/om_1/reply');
    expect(reply.headers.authorization).toBe('Bearer t-feishu');
    expect(reply.body).toEqual({ msg_type: 'text', content: JSON.stringify({ text: 'Echo: hello feishu' }) });
    const tokenCall = fake.requests.find((r) => r.path.endsWith('tenant_access_token/internal'))!;
    expect(tokenCall.body).toEqual({ app_id: 'cli_1', app_secret: 'sec' });
    const chat = await t.app.mongo.db.collection('chats').findOne({ shareId: token });
    expect(chat).toMatchObject({ source: 'feishu', outLinkUid: 'ou_1', chatId: 'feishu-oc_1' });
  });
});

describe('imC (WeChat official account)', () => {
  it('verifies the signature, echoes echostr, and sends the answer through the customer-service API', async () => {
    const token = await createLink('official_account', { appId: 'wx1', secret: 'wxsecret', CallbackToken: 'cbt', apiBaseUrl: `${fake.origin}/wechat` });
    const url = `/api/support/outLink/imC/${token}`;
    const q = { timestamp: '1700000000', nonce: 'n1' };
    const signature = sha1(['cbt', q.timestamp, q.nonce]);
    const verify = await t.app.inject({ method: 'GET', url: `${url}?signature=${signature}&timestamp=${q.timestamp}&nonce=${q.nonce}&echostr=echo-42` });
    expect(verify.statusCode).toBe(200);
    expect(verify.body).toBe('echo-42');
    expect((await t.app.inject({ method: 'GET', url: `${url}?signature=bad&timestamp=1&nonce=2&echostr=x` })).statusCode).toBe(401);

    const xml = '<xml><ToUserName><![CDATA[gh_1]]></ToUserName><FromUserName><![CDATA[openid-7]]></FromUserName><CreateTime>1700000000</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[hello wechat]]></Content><MsgId>1</MsgId></xml>';
    const res = await t.app.inject({ method: 'POST', url: `${url}?signature=${signature}&timestamp=${q.timestamp}&nonce=${q.nonce}`, headers: { 'content-type': 'text/xml' }, payload: xml });
    expect(res.body).toBe('success');
    const sent = await fake.waitFor('/wechat/cgi-bin/message/custom/send');
    expect(sent.body).toEqual({ touser: 'openid-7', msgtype: 'text', text: { content: 'Echo: hello wechat' } });
    const tokenCall = fake.requests.find((r) => r.path === '/wechat/cgi-bin/token')!;
    expect(tokenCall).toBeDefined();
  });
});

describe('imB (WeCom)', () => {
  it('decrypts the echostr, then decrypts a message and sends the answer through the app-message API', async () => {
    const token = await createLink('wecom', { CorpId: 'corp1', SuiteSecret: 'ss', AgentId: '1000002', CallbackToken: 'wct', CallbackEncodingAesKey: AES_KEY, apiBaseUrl: `${fake.origin}/wecom` });
    const url = `/api/support/outLink/imB/${token}`;
    const echostr = wecomEncrypt('plain-echo', 'corp1');
    const params = (encrypted: string) => new URLSearchParams({ msg_signature: sha1(['wct', '1700', 'n2', encrypted]), timestamp: '1700', nonce: 'n2' });
    const verify = await t.app.inject({ method: 'GET', url: `${url}?${params(echostr)}&echostr=${encodeURIComponent(echostr)}` });
    expect(verify.statusCode, verify.body).toBe(200);
    expect(verify.body).toBe('plain-echo');
    const badSig = await t.app.inject({ method: 'GET', url: `${url}?msg_signature=00&timestamp=1700&nonce=n2&echostr=${encodeURIComponent(echostr)}` });
    expect(badSig.statusCode).toBe(401);

    const inner = '<xml><ToUserName><![CDATA[corp1]]></ToUserName><FromUserName><![CDATA[zhangsan]]></FromUserName><CreateTime>1700</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[hello wecom]]></Content><MsgId>9</MsgId><AgentID>1000002</AgentID></xml>';
    const encrypted = wecomEncrypt(inner, 'corp1');
    const res = await t.app.inject({
      method: 'POST',
      url: `${url}?${params(encrypted)}`,
      headers: { 'content-type': 'text/xml' },
      payload: `<xml><ToUserName><![CDATA[corp1]]></ToUserName><Encrypt><![CDATA[${encrypted}]]></Encrypt><AgentID><![CDATA[1000002]]></AgentID></xml>`,
    });
    expect(res.statusCode, res.body).toBe(200);
    const sent = await fake.waitFor('/wecom/cgi-bin/message/send');
    expect(sent.body).toEqual({ touser: 'zhangsan', msgtype: 'text', agentid: '1000002', text: { content: 'Echo: hello wecom' } });
    const tokenCall = fake.requests.find((r) => r.path === '/wecom/cgi-bin/gettoken')!;
    expect(tokenCall).toBeDefined();
  });
});
