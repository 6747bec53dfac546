/**
 * Sends a text through each messaging channel's API: the credential's access token (kept between
 * sends, channel-tokens.repo.ts), then the message, both through the chat module's outbound HTTP
 * (pass `chat.outbound`). The base URL is the link's `app.apiBaseUrl`, else the channel's public
 * one. A failure throws; the caller logs it.
 */
import { createHash } from 'node:crypto';
import { urlForMessage } from '../../../infra/join-url.js';
import type { safeFetch } from '../../../infra/outbound-fetch.js';
import type { OutLinkDoc } from '../outlinks.repo.js';
import type { ChannelJobMessage } from './channel-events.repo.js';
import type { ChannelTokensRepo } from './channel-tokens.repo.js';

type Outbound = typeof safeFetch;
/** A channel link's settings as the channel console gave them (`OutLinkDoc.app`). */
type ChannelSettings = OutLinkDoc['app'];
type Json = Record<string, unknown>;

/** A setting or event field as a string, '' when it is absent or not a string. */
export const str = (value: unknown) => (typeof value === 'string' ? value : '');

/** The JSON answer of a channel API call; an HTTP error throws unless it carries a JSON answer the caller reads (`jsonErrors`). */
async function jsonOf(outbound: Outbound, url: string, init: { method: string; headers?: Record<string, string>; body?: string }, jsonErrors = false): Promise<Json> {
  const response = await outbound(url, { method: init.method, headers: init.headers, body: init.body, timeoutMs: 15_000 });
  let json: unknown;
  try {
    json = JSON.parse(response.text());
  } catch {
    json = undefined;
  }
  const isObject = typeof json === 'object' && json !== null && !Array.isArray(json);
  if (response.status >= 400 && !(jsonErrors && isObject)) throw new Error(`${urlForMessage(url)} answered HTTP ${response.status}`);
  if (!isObject) throw new Error(`${urlForMessage(url)} answered something that is not a JSON object`);
  return json as Json;
}

/** A token as the channel issued it, and for how many seconds it holds. */
interface IssuedToken {
  token: string;
  expiresInS: number;
}

/** How long before the channel's expiry a token stops being used: 5 minutes, or half a short lifetime. */
const tokenUntil = (nowMs: number, expiresInS: number) => nowMs + (expiresInS - Math.min(300, expiresInS / 2)) * 1000;

/**
 * The channels' access tokens between sends: kept in the database (every replica uses the one
 * stored) until shortly before they expire; one request per credential at a time in a process.
 * A token the channel calls invalid or expired is dropped and the call made once more with a new one.
 */
export function createChannelTokens(repo: Pick<ChannelTokensRepo, 'find' | 'save' | 'drop'>, now: () => number, warn: (message: string, error: unknown) => void) {
  const issuing = new Map<string, Promise<string>>();
  /** The database failing does not stop an answer: the token is requested as before. */
  const tolerant = async <T>(what: string, op: () => Promise<T>, fallback: T): Promise<T> => {
    try {
      return await op();
    } catch (error) {
      warn(`messaging channel access token could not be ${what}`, error);
      return fallback;
    }
  };
  function issue(key: string, request: () => Promise<IssuedToken>): Promise<string> {
    let pending = issuing.get(key);
    if (!pending) {
      pending = (async () => {
        const issued = await request();
        const until = tokenUntil(now(), issued.expiresInS);
        if (until > now()) await tolerant('stored', () => repo.save(key, issued.token, new Date(until)), undefined);
        return issued.token;
      })().finally(() => issuing.delete(key));
      issuing.set(key, pending);
    }
    return pending;
  }
  return {
    /**
     * `call` with the token of a credential (`key` names it: no secret in it): the kept one, else
     * a new one from `request`. `call` answers whether the channel refused the token as invalid
     * or expired: then it is dropped, and `call` runs once more with a new token.
     */
    async withToken(key: string, request: () => Promise<IssuedToken>, call: (token: string) => Promise<'refused' | 'done'>): Promise<void> {
      const kept = await tolerant('read', () => repo.find(key, new Date(now())), null);
      const token = kept ?? (await issue(key, request));
      if ((await call(token)) === 'done') return;
      await tolerant('dropped', () => repo.drop(key, token), undefined);
      if ((await call(await issue(key, request))) === 'refused') throw new Error('The channel refused a newly issued access token');
    },
  };
}

export type ChannelTokens = ReturnType<typeof createChannelTokens>;

/** The key of a credential's token: a hash of the channel, API base, app id and secret. */
const credentialKey = (...parts: string[]) => createHash('sha256').update(JSON.stringify(parts)).digest('hex');
const seconds = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0);

/** WeChat's and WeCom's errcodes of an access token that is invalid (40001, 40014) or expired (42001). */
const WEIXIN_TOKEN_REFUSED = new Set([40001, 40014, 42001]);
/** Feishu's codes of an invalid or missing tenant access token. */
const FEISHU_TOKEN_REFUSED = new Set([99991661, 99991663]);

/** WeChat / WeCom: a send's answer, refused for its token, or an error when it failed otherwise. */
function weixinOutcome(answer: Json, what: string): 'refused' | 'done' {
  const code = answer.errcode;
  if (code === undefined || code === 0) return 'done';
  if (typeof code === 'number' && WEIXIN_TOKEN_REFUSED.has(code)) return 'refused';
  throw new Error(`${what} failed: errcode ${String(code)} ${str(answer.errmsg)}`.trim());
}

/** Feishu/Lark: a reply to the message `messageId`, as the link's app (tenant token). */
export async function sendFeishuReply(outbound: Outbound, tokens: ChannelTokens, settings: ChannelSettings, messageId: string, text: string): Promise<void> {
  const base = str(settings?.apiBaseUrl) || 'https://open.feishu.cn';
  const appId = str(settings?.appId);
  const secret = str(settings?.appSecret);
  const request = async (): Promise<IssuedToken> => {
    const auth = await jsonOf(outbound, `${base}/open-apis/auth/v3/tenant_access_token/internal`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ app_id: settings?.appId, app_secret: settings?.appSecret }),
    });
    if (auth.code !== 0 || typeof auth.tenant_access_token !== 'string') throw new Error(`Feishu token request failed: ${String(auth.msg ?? auth.code)}`);
    return { token: auth.tenant_access_token, expiresInS: seconds(auth.expire) };
  };
  await tokens.withToken(credentialKey('feishu', base, appId, secret), request, async (token) => {
    const answer = await jsonOf(
      outbound,
      `${base}/open-apis/im/v1/messages/${encodeURIComponent(messageId)}/reply`,
      { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ msg_type: 'text', content: JSON.stringify({ text }) }) },
      true,
    );
    if (answer.code === undefined || answer.code === 0) return 'done';
    if (typeof answer.code === 'number' && FEISHU_TOKEN_REFUSED.has(answer.code)) return 'refused';
    throw new Error(`Feishu reply failed: code ${String(answer.code)} ${str(answer.msg)}`.trim());
  });
}

/** WeCom: an app message from the link's agent to `user`. */
export async function sendWecomText(outbound: Outbound, tokens: ChannelTokens, settings: ChannelSettings, user: string, text: string): Promise<void> {
  const base = str(settings?.apiBaseUrl) || 'https://qyapi.weixin.qq.com';
  const corpId = str(settings?.CorpId);
  const secret = str(settings?.SuiteSecret);
  const request = async (): Promise<IssuedToken> => {
    const auth = await jsonOf(outbound, `${base}/cgi-bin/gettoken?${new URLSearchParams({ corpid: corpId, corpsecret: secret })}`, { method: 'GET' });
    if (typeof auth.access_token !== 'string') throw new Error(`WeCom token request failed: ${String(auth.errmsg ?? auth.errcode)}`);
    return { token: auth.access_token, expiresInS: seconds(auth.expires_in) };
  };
  await tokens.withToken(credentialKey('wecom', base, corpId, secret), request, async (token) => {
    const answer = await jsonOf(outbound, `${base}/cgi-bin/message/send?access_token=${encodeURIComponent(token)}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ touser: user, msgtype: 'text', agentid: settings?.AgentId, text: { content: text } }),
    });
    return weixinOutcome(answer, 'WeCom message/send');
  });
}

/** WeChat official account: a customer-service message to `user`. */
export async function sendWechatText(outbound: Outbound, tokens: ChannelTokens, settings: ChannelSettings, user: string, text: string): Promise<void> {
  const base = str(settings?.apiBaseUrl) || 'https://api.weixin.qq.com';
  const appId = str(settings?.appId);
  const secret = str(settings?.secret);
  const request = async (): Promise<IssuedToken> => {
    const query = new URLSearchParams({ grant_type: 'client_credential', appid: appId, secret });
    const auth = await jsonOf(outbound, `${base}/cgi-bin/token?${query}`, { method: 'GET' });
    if (typeof auth.access_token !== 'string') throw new Error(`WeChat token request failed: ${String(auth.errmsg ?? auth.errcode)}`);
    return { token: auth.access_token, expiresInS: seconds(auth.expires_in) };
  };
  await tokens.withToken(credentialKey('wechat', base, appId, secret), request, async (token) => {
    const answer = await jsonOf(outbound, `${base}/cgi-bin/message/custom/send?access_token=${encodeURIComponent(token)}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ touser: user, msgtype: 'text', text: { content: text } }),
    });
    return weixinOutcome(answer, 'WeChat message/custom/send');
  });
}

/** How a stored message's answer goes back: a reply to its Feishu message, or a text to its WeCom / WeChat user. */
export function channelSender(outbound: Outbound, tokens: ChannelTokens, link: OutLinkDoc, message: Pick<ChannelJobMessage, 'channel' | 'to'>): (text: string) => Promise<void> {
  if (message.channel === 'feishu') return (text) => sendFeishuReply(outbound, tokens, link.app, message.to, text);
  if (message.channel === 'wecom') return (text) => sendWecomText(outbound, tokens, link.app, message.to, text);
  return (text) => sendWechatText(outbound, tokens, link.app, message.to, text);
}
