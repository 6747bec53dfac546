import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { createUser, login } from '../helpers/platform.js';
import { ok } from './apps-helpers.js';
import { AES_KEY, feishuEncrypt, sha1 } from './channel-helpers.js';
import { createPublishedApp, simpleChatGraph, startChatApp } from './chat-helpers.js';

/**
 * What each messaging-channel receiver requires of a request before it acts: a link's secrets
 * are always checked (none configured is a refusal, not a pass), and a signature holds only
 * within 5 minutes of its timestamp.
 */
let t: TestApp;
let fake: FakeOpenAi;
let tok: string;
let appId: string;

const nowSeconds = (offsetSeconds = 0) => String(Math.floor(t.app.identity.clock.now() / 1000) + offsetSeconds);
const SIX_MINUTES = 6 * 60;

/** Feishu's delivery of an encrypted body: X-Lark-Signature = sha256(timestamp + nonce + encryptKey + body). */
function feishuSigned(body: string, encryptKey: string, timestamp = nowSeconds()) {
  const nonce = 'nonce-1';
  const signature = createHash('sha256').update(timestamp + nonce + encryptKey + body).digest('hex');
  return { 'content-type': 'application/json; charset=utf-8', 'x-lark-request-timestamp': timestamp, 'x-lark-request-nonce': nonce, 'x-lark-signature': signature };
}

const feishuEvent = (eventId: string, messageId: string, text: string) => ({
  schema: '2.0',
  header: { event_id: eventId, event_type: 'im.message.receive_v1', create_time: '1700000000000', app_id: 'cli_s', tenant_key: 'tk' },
  event: {
    sender: { sender_id: { open_id: 'ou_s' }, sender_type: 'user', tenant_key: 'tk' },
    message: { message_id: messageId, chat_id: `oc_${messageId}`, chat_type: 'p2p', message_type: 'text', create_time: '1700000000000', content: JSON.stringify({ text }) },
  },
});

beforeAll(async () => {
  ({ t, fake } = await startChatApp());
  await createUser(t, { username: 'sig-owner', password: 'password-s1' });
  tok = await login(t, 'sig-owner', 'password-s1');
  appId = await createPublishedApp(t, tok, 'Signed bot', simpleChatGraph);
  fake.route('POST', '/feishu/open-apis/auth/v3/tenant_access_token/internal', () => ({ json: { code: 0, tenant_access_token: 't-feishu' } }));
  fake.route('POST', '/feishu/open-apis/im/v1/messages/om_signed/reply', () => ({ json: { code: 0 } }));
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

const createLink = (type: string, app: Record<string, unknown>) => ok(t, tok, 'POST', '/support/outLink/create', { appId, type, name: type, app }) as Promise<string>;
const post = (url: string, headers: Record<string, string>, payload: string) => t.app.inject({ method: 'POST', url, headers, payload });

describe('Feishu with an encryptKey', () => {
  const encryptKey = 'ek-secret';
  let url: string;
  beforeAll(async () => {
    // No verificationToken: the encryptKey alone must keep forged events out.
    url = `/api/support/outLink/feishu/${await createLink('feishu', { appId: 'cli_s', appSecret: 'sec', encryptKey, apiBaseUrl: `${fake.origin}/feishu` })}`;
  });

  it('refuses a plaintext event (Feishu encrypts every event of such an app)', async () => {
    const forged = JSON.stringify(feishuEvent('ev-forged', 'om_forged', 'forged'));
    const res = await post(url, { 'content-type': 'application/json' }, forged);
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ code: 505001, statusText: 'unAuthLink', data: null });
    expect(await t.app.mongo.db.collection('chats').findOne({ chatId: { $regex: 'oc_om_forged' } })).toBeNull();
  });

  it('answers a signed encrypted message, and refuses it unsigned, wrongly signed or signed over 5 minutes ago', async () => {
    const body = JSON.stringify({ encrypt: feishuEncrypt(JSON.stringify(feishuEvent('ev-signed', 'om_signed', 'hello signed')), encryptKey) });
    const unsigned = await post(url, { 'content-type': 'application/json' }, body);
    expect(unsigned.statusCode).toBe(401);
    expect(unsigned.json().message).toContain('X-Lark-Signature');
    expect((await post(url, feishuSigned(body, 'another-key'), body)).statusCode).toBe(401);
    // The signature covers the body: another body under a captured signature is refused.
    expect((await post(url, feishuSigned(body, encryptKey), `${body} `)).statusCode).toBe(401);
    const stale = await post(url, feishuSigned(body, encryptKey, nowSeconds(-SIX_MINUTES)), body);
    expect(stale.statusCode).toBe(401);
    expect(stale.json().message).toContain('5 minutes');
    expect((await post(url, feishuSigned(body, encryptKey, nowSeconds(SIX_MINUTES)), body)).statusCode).toBe(401);

    const res = await post(url, feishuSigned(body, encryptKey), body);
    expect(res.statusCode, res.body).toBe(200);
    const reply = await fake.waitFor('/feishu/open-apis/im/v1/messages/om_signed/reply');
    expect(reply.body).toEqual({ msg_type: 'text', content: JSON.stringify({ text: 'Echo: hello signed' }) });
  });

  it("a NUL inside the message's own JSON text is left out of the question", async () => {
    fake.route('POST', '/feishu/open-apis/im/v1/messages/om_nul_text/reply', () => ({ json: { code: 0 } }));
    const body = JSON.stringify({ encrypt: feishuEncrypt(JSON.stringify(feishuEvent('ev-nul-text', 'om_nul_text', 'a\u0000b')), encryptKey) });
    expect((await post(url, feishuSigned(body, encryptKey), body)).statusCode).toBe(200);
    const reply = await fake.waitFor('/feishu/open-apis/im/v1/messages/om_nul_text/reply');
    expect(reply.body).toEqual({ msg_type: 'text', content: JSON.stringify({ text: 'Echo: ab' }) });
  });

  it('answers the console URL check encrypted and unsigned (as Feishu sends it), never in plaintext', async () => {
    const challenge = JSON.stringify({ encrypt: feishuEncrypt(JSON.stringify({ challenge: 'ch-enc', type: 'url_verification' }), encryptKey) });
    const res = await post(url, { 'content-type': 'application/json' }, challenge);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ challenge: 'ch-enc' });
    expect((await post(url, { 'content-type': 'application/json' }, JSON.stringify({ challenge: 'plain', type: 'url_verification' }))).statusCode).toBe(401);
  });

  it('an encrypted payload that is no JSON object, or one the request guard refuses, is a 400, not a 500', async () => {
    // A decrypted event gets the guard every request body gets (no NUL, bounded nesting).
    const guarded = [JSON.stringify(feishuEvent('ev-\u0000', 'om_nul', 'hi')), `{"x":${'['.repeat(200)}${']'.repeat(200)}}`];
    for (const json of ['null', '42', '"text"', '[1]', ...guarded]) {
      const body = JSON.stringify({ encrypt: feishuEncrypt(json, encryptKey) });
      const res = await post(url, feishuSigned(body, encryptKey), body);
      expect(res.statusCode, `${json}: ${res.body}`).toBe(400);
      expect(res.json()).toMatchObject({ statusText: 'missingParams', data: null });
    }
  });
});

describe('Feishu without any secret', () => {
  it('a link with neither encryptKey nor verificationToken refuses events and the URL check', async () => {
    const url = `/api/support/outLink/imA/${await createLink('feishu', { appId: 'cli_n', appSecret: 'sec', apiBaseUrl: `${fake.origin}/feishu` })}`;
    for (const payload of [feishuEvent('ev-open', 'om_open', 'hi'), { challenge: 'c', type: 'url_verification' }]) {
      const res = await post(url, { 'content-type': 'application/json' }, JSON.stringify(payload));
      expect(res.statusCode).toBe(401);
      expect(res.json().message).toContain('neither an encryptKey nor a verificationToken');
    }
  });
});

describe('WeChat official account signatures', () => {
  it('a signature more than 5 minutes old (or ahead) is refused, whatever the body; the signed query is not logged', async () => {
    const url = `/api/support/outLink/offiaccount/${await createLink('official_account', { appId: 'wx1', secret: 'wxsecret', CallbackToken: 'cbt', apiBaseUrl: `${fake.origin}/wx` })}`;
    const signed = (timestamp: string) => `signature=${sha1(['cbt', timestamp, '1514711092'])}&timestamp=${timestamp}&nonce=1514711092`;
    const fresh = nowSeconds();
    const verify = await t.app.inject({ method: 'GET', url: `${url}?${signed(fresh)}&echostr=echo-once-42` });
    expect(verify.body).toBe('echo-once-42');
    const xml = '<xml><ToUserName><![CDATA[gh_1]]></ToUserName><FromUserName><![CDATA[victim-openid]]></FromUserName><CreateTime>1</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[forged text]]></Content><MsgId>31337</MsgId></xml>';
    for (const timestamp of [nowSeconds(-SIX_MINUTES), nowSeconds(SIX_MINUTES), '1700000000']) {
      expect((await t.app.inject({ method: 'GET', url: `${url}?${signed(timestamp)}&echostr=x` })).statusCode).toBe(401);
      const res = await t.app.inject({ method: 'POST', url: `${url}?${signed(timestamp)}`, headers: { 'content-type': 'text/xml' }, payload: xml });
      expect(res.statusCode).toBe(401);
      expect(res.json().message).toContain('5 minutes');
    }
    const logs = t.logs();
    expect(logs).not.toContain(sha1(['cbt', fresh, '1514711092']));
    expect(logs).not.toContain('echo-once-42');
  });
});

describe('WeCom signatures', () => {
  it('a msg_signature more than 5 minutes old is refused before anything is decrypted; it is not logged', async () => {
    const url = `/api/support/outLink/wecom/${await createLink('wecom', { CorpId: 'corp1', SuiteSecret: 'ss', AgentId: '1', CallbackToken: 'wct', CallbackEncodingAesKey: AES_KEY, apiBaseUrl: `${fake.origin}/wecom` })}`;
    // The echostr does not need to decrypt: the age is checked with the signature.
    const echostr = 'c29tZSBjaXBoZXJ0ZXh0';
    for (const timestamp of [nowSeconds(-SIX_MINUTES), '1700']) {
      const signature = sha1(['wct', timestamp, 'n1', echostr]);
      const res = await t.app.inject({ method: 'GET', url: `${url}?${new URLSearchParams({ msg_signature: signature, timestamp, nonce: 'n1', echostr })}` });
      expect(res.statusCode).toBe(401);
      expect(res.json().message).toContain('5 minutes');
      expect(t.logs()).not.toContain(signature);
    }
  });
});
