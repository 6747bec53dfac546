/**
 * Sends a text through each messaging channel's API: a token request, then the message, both
 * through the chat module's outbound HTTP (pass `chat.outbound`). The base URL is the link's
 * `app.apiBaseUrl`, else the channel's public one. A failure throws; the caller logs it.
 */
import { urlForMessage } from '../../../infra/join-url.js';
import type { safeFetch } from '../../../infra/outbound-fetch.js';
import type { OutLinkDoc } from '../outlinks.repo.js';
import type { ChannelJobMessage } from './channel-events.repo.js';

type Outbound = typeof safeFetch;
/** A channel link's settings as the channel console gave them (`OutLinkDoc.app`). */
type ChannelSettings = OutLinkDoc['app'];

/** A setting or event field as a string, '' when it is absent or not a string. */
export const str = (value: unknown) => (typeof value === 'string' ? value : '');

async function jsonOf(outbound: Outbound, url: string, init: { method: string; headers?: Record<string, string>; body?: string }): Promise<Record<string, unknown>> {
  const response = await outbound(url, { method: init.method, headers: init.headers, body: init.body, timeoutMs: 15_000 });
  if (response.status >= 400) throw new Error(`${urlForMessage(url)} answered HTTP ${response.status}`);
  return JSON.parse(response.text()) as Record<string, unknown>;
}

/** Feishu/Lark: a reply to the message `messageId`, as the link's app (tenant token). */
export async function sendFeishuReply(outbound: Outbound, settings: ChannelSettings, messageId: string, text: string): Promise<void> {
  const base = str(settings?.apiBaseUrl) || 'https://open.feishu.cn';
  const auth = await jsonOf(outbound, `${base}/open-apis/auth/v3/tenant_access_token/internal`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ app_id: settings?.appId, app_secret: settings?.appSecret }),
  });
  if (auth.code !== 0 || typeof auth.tenant_access_token !== 'string') throw new Error(`Feishu token request failed: ${String(auth.msg ?? auth.code)}`);
  await jsonOf(outbound, `${base}/open-apis/im/v1/messages/${encodeURIComponent(messageId)}/reply`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${auth.tenant_access_token}` },
    body: JSON.stringify({ msg_type: 'text', content: JSON.stringify({ text }) }),
  });
}

/** WeCom: an app message from the link's agent to `user`. */
export async function sendWecomText(outbound: Outbound, settings: ChannelSettings, user: string, text: string): Promise<void> {
  const base = str(settings?.apiBaseUrl) || 'https://qyapi.weixin.qq.com';
  const query = new URLSearchParams({ corpid: str(settings?.CorpId), corpsecret: str(settings?.SuiteSecret) });
  const auth = await jsonOf(outbound, `${base}/cgi-bin/gettoken?${query}`, { method: 'GET' });
  if (typeof auth.access_token !== 'string') throw new Error(`WeCom token request failed: ${String(auth.errmsg ?? auth.errcode)}`);
  await jsonOf(outbound, `${base}/cgi-bin/message/send?access_token=${encodeURIComponent(auth.access_token)}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ touser: user, msgtype: 'text', agentid: settings?.AgentId, text: { content: text } }),
  });
}

/** WeChat official account: a customer-service message to `user`. */
export async function sendWechatText(outbound: Outbound, settings: ChannelSettings, user: string, text: string): Promise<void> {
  const base = str(settings?.apiBaseUrl) || 'https://api.weixin.qq.com';
  const query = new URLSearchParams({ grant_type: 'client_credential', appid: str(settings?.appId), secret: str(settings?.secret) });
  const auth = await jsonOf(outbound, `${base}/cgi-bin/token?${query}`, { method: 'GET' });
  if (typeof auth.access_token !== 'string') throw new Error(`WeChat token request failed: ${String(auth.errmsg ?? auth.errcode)}`);
  await jsonOf(outbound, `${base}/cgi-bin/message/custom/send?access_token=${encodeURIComponent(auth.access_token)}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ touser: user, msgtype: 'text', text: { content: text } }),
  });
}

/** How a stored message's answer goes back: a reply to its Feishu message, or a text to its WeCom / WeChat user. */
export function channelSender(outbound: Outbound, link: OutLinkDoc, message: Pick<ChannelJobMessage, 'channel' | 'to'>): (text: string) => Promise<void> {
  if (message.channel === 'feishu') return (text) => sendFeishuReply(outbound, link.app, message.to, text);
  if (message.channel === 'wecom') return (text) => sendWecomText(outbound, link.app, message.to, text);
  return (text) => sendWechatText(outbound, link.app, message.to, text);
}
