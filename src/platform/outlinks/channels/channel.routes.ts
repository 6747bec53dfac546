/**
 * Messaging-channel receivers, each served at the specification's name (imA, imB, imC) and at
 * the reference's real path (feishu, wecom, offiaccount), which users paste into the channel
 * consoles. Each verifies the link token and the channel's signature, answers the
 * channel's URL verification, and for an incoming text message runs the link's app in the
 * background and sends the answer through the channel's API (base URL `app.apiBaseUrl` of the
 * link, else the channel's public one). See docs/chat.md.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { Errors } from '../../../infra/errors.js';
import { urlForMessage } from '../../../infra/join-url.js';
import type { ChatModule } from '../../chat/chat-module.js';
import { definePlatformRoute, type PlatformRouteOptions, parseWith } from '../../define-route.js';
import type { OutLinkDoc, OutLinkType } from '../outlinks.repo.js';
import type { ChannelEventsRepo } from './channel-events.repo.js';
import { feishuDecrypt, parseFlatXml, sameText, sha1Signature, wecomDecrypt } from './channel-crypto.js';
import { channelChatId, runChannelTurn } from './channel-runner.js';

const tokenParam = z.object({ token: z.string().min(1).max(100) });
const str = (value: unknown) => (typeof value === 'string' ? value : '');

async function channelLink(chat: ChatModule, token: string, type: OutLinkType): Promise<OutLinkDoc> {
  const link = await chat.outLinks.findByShareId(token);
  if (link.type !== type) throw Errors.channelLinkRefused(`This link is not a ${type} channel`);
  return link;
}

async function jsonOf(chat: ChatModule, url: string, init: { method: string; headers?: Record<string, string>; body?: string }): Promise<Record<string, unknown>> {
  const response = await chat.outbound(url, { method: init.method, headers: init.headers, body: init.body, timeoutMs: 15_000 });
  if (response.status >= 400) throw new Error(`${urlForMessage(url)} answered HTTP ${response.status}`);
  return JSON.parse(response.text()) as Record<string, unknown>;
}

/** One receiver at both of its paths: `/support/outLink/{name}/:token`. */
function defineChannelRoute(app: FastifyInstance, names: [string, string], options: Omit<PlatformRouteOptions<undefined, [], unknown>, 'url' | 'methods' | 'auth' | 'raw'>): void {
  for (const name of names) {
    // GET is the consoles' URL verification (echostr), POST carries the events.
    definePlatformRoute(app, { ...options, methods: ['GET', 'POST'], url: `/support/outLink/${name}/:token`, auth: [], raw: true });
  }
}

/** How long a shutdown waits for channel turns still running (their answers are sent then). */
export const CHANNEL_DRAIN_MS = 5_000;

export function registerChannelRoutes(app: FastifyInstance, chat: ChatModule, events: ChannelEventsRepo): void {
  const logTurnFailure = (error: unknown) => app.log.error({ err: error }, 'messaging channel turn failed');
  // A turn runs after the channel got its answer: tracked, so that a shutdown lets it finish.
  const running = new Set<Promise<void>>();
  const background = (work: () => Promise<void>) => {
    const turn: Promise<void> = work()
      .catch((error: unknown) => app.log.warn({ err: error }, 'messaging channel delivery failed'))
      .finally(() => running.delete(turn));
    running.add(turn);
  };
  app.addHook('onClose', async () => {
    if (running.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, CHANNEL_DRAIN_MS);
    });
    await Promise.race([Promise.allSettled([...running]), late]);
    clearTimeout(timer);
  });
  /** The first delivery of a message to a link, on any replica (a channel's retry is not run again). */
  const firstDelivery = (link: OutLinkDoc, messageId: string | undefined) =>
    messageId ? events.claim(String(link._id), messageId, new Date(app.identity.clock.now())) : Promise.resolve(true);

  // ---- imA: Feishu / Lark (JSON events, optional encryption) ----
  async function feishuSend(link: OutLinkDoc, messageId: string, text: string) {
    const base = str(link.app?.apiBaseUrl) || 'https://open.feishu.cn';
    const auth = await jsonOf(chat, `${base}/open-apis/auth/v3/tenant_access_token/internal`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ app_id: link.app?.appId, app_secret: link.app?.appSecret }),
    });
    if (auth.code !== 0 || typeof auth.tenant_access_token !== 'string') throw new Error(`Feishu token request failed: ${String(auth.msg ?? auth.code)}`);
    await jsonOf(chat, `${base}/open-apis/im/v1/messages/${encodeURIComponent(messageId)}/reply`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${auth.tenant_access_token}` },
      body: JSON.stringify({ msg_type: 'text', content: JSON.stringify({ text }) }),
    });
  }

  defineChannelRoute(app, ['imA', 'feishu'], {
    summary: 'Feishu/Lark event receiver of a channel link (url_verification and im.message.receive_v1)',
    tags: ['outLink'],
    handler: async ({ request, reply }) => {
      const { token } = parseWith(tokenParam, request.params);
      const link = await channelLink(chat, token, 'feishu');
      if (request.method === 'GET') return reply.send({});
      let body = (request.body ?? {}) as Record<string, unknown>;
      if (typeof body.encrypt === 'string') {
        if (!link.app?.encryptKey) throw Errors.channelLinkRefused('This link has no encryptKey to decrypt the event');
        try {
          body = JSON.parse(feishuDecrypt(body.encrypt, String(link.app.encryptKey))) as Record<string, unknown>;
        } catch {
          throw Errors.channelLinkRefused('The event could not be decrypted with this link’s encryptKey');
        }
      }
      const header = (body.header ?? {}) as Record<string, unknown>;
      const verification = str(link.app?.verificationToken);
      const given = str(body.token) || str(header.token);
      if (verification && !sameText(given, verification)) throw Errors.channelLinkRefused('The verification token does not match this link');
      if (body.type === 'url_verification') return reply.send({ challenge: body.challenge });
      const event = (body.event ?? {}) as { message?: Record<string, unknown>; sender?: { sender_id?: Record<string, unknown> } };
      const eventId = str(header.event_id);
      if (header.event_type !== 'im.message.receive_v1' || event.message?.message_type !== 'text') return reply.send({});
      if (!(await firstDelivery(link, eventId))) return reply.send({});
      let text = '';
      try {
        text = str((JSON.parse(str(event.message.content)) as { text?: unknown }).text).replace(/@_user_\d+/g, '').trim();
      } catch {
        text = '';
      }
      const messageId = str(event.message.message_id);
      const uid = str(event.sender?.sender_id?.open_id) || str(event.message.chat_id);
      if (text && messageId) {
        background(async () => {
          if (link.immediateResponse) await feishuSend(link, messageId, link.immediateResponse);
          const answer = await runChannelTurn(chat, link, { uid, chatId: channelChatId('feishu', link, str(event.message?.chat_id) || uid), text, channel: 'feishu' }, logTurnFailure);
          if (answer) await feishuSend(link, messageId, answer);
        });
      }
      return reply.send({});
    },
  });

  // XML bodies (WeChat, WeCom) arrive as text; only these routes need them.
  app.register(async (scope) => {
    scope.addContentTypeParser(['text/xml', 'application/xml'], { parseAs: 'string' }, (_request, body, done) => done(null, body));

    // ---- imB: WeCom (always encrypted) ----
    const wecomSend = async (link: OutLinkDoc, user: string, text: string) => {
      const base = str(link.app?.apiBaseUrl) || 'https://qyapi.weixin.qq.com';
      const query = new URLSearchParams({ corpid: str(link.app?.CorpId), corpsecret: str(link.app?.SuiteSecret) });
      const auth = await jsonOf(chat, `${base}/cgi-bin/gettoken?${query}`, { method: 'GET' });
      if (typeof auth.access_token !== 'string') throw new Error(`WeCom token request failed: ${String(auth.errmsg ?? auth.errcode)}`);
      await jsonOf(chat, `${base}/cgi-bin/message/send?access_token=${encodeURIComponent(auth.access_token)}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ touser: user, msgtype: 'text', agentid: link.app?.AgentId, text: { content: text } }),
      });
    };

    defineChannelRoute(scope, ['imB', 'wecom'], {
      summary: 'WeCom callback of a channel link (echostr verification and encrypted text messages)',
      tags: ['outLink'],
      handler: async ({ request, reply }) => {
        const { token } = parseWith(tokenParam, request.params);
        const link = await channelLink(chat, token, 'wecom');
        const q = request.query as Record<string, unknown>;
        const callbackToken = str(link.app?.CallbackToken);
        const aesKey = str(link.app?.CallbackEncodingAesKey);
        if (!callbackToken || aesKey.length !== 43) throw Errors.channelLinkRefused('This link has no CallbackToken or 43-character CallbackEncodingAesKey');
        const verify = (encrypted: string) => {
          if (!sameText(sha1Signature([callbackToken, str(q.timestamp), str(q.nonce), encrypted]), str(q.msg_signature))) throw Errors.channelLinkRefused('The message signature does not match');
          let plain: { message: string; receiveId: string };
          try {
            plain = wecomDecrypt(encrypted, aesKey);
          } catch {
            // A key that is not base64, or a message that is not this key's ciphertext.
            throw Errors.channelLinkRefused('The message could not be decrypted with this link’s CallbackEncodingAesKey');
          }
          if (link.app?.CorpId && plain.receiveId !== link.app.CorpId) throw Errors.channelLinkRefused('The message was not sent to this corp');
          return plain.message;
        };
        if (request.method === 'GET') return reply.type('text/plain').send(verify(str(q.echostr)));
        const outer = parseFlatXml(str(request.body));
        const message = parseFlatXml(verify(outer.Encrypt ?? ''));
        if (message.MsgType === 'text' && message.FromUserName && message.Content && (await firstDelivery(link, message.MsgId))) {
          const user = message.FromUserName;
          background(async () => {
            if (link.immediateResponse) await wecomSend(link, user, link.immediateResponse);
            const answer = await runChannelTurn(chat, link, { uid: user, chatId: channelChatId('wecom', link, user), text: message.Content!, channel: 'wecom' }, logTurnFailure);
            if (answer) await wecomSend(link, user, answer);
          });
        }
        return reply.type('text/plain').send('');
      },
    });

    // ---- imC: WeChat official account (plaintext mode) ----
    const wechatSend = async (link: OutLinkDoc, user: string, text: string) => {
      const base = str(link.app?.apiBaseUrl) || 'https://api.weixin.qq.com';
      const query = new URLSearchParams({ grant_type: 'client_credential', appid: str(link.app?.appId), secret: str(link.app?.secret) });
      const auth = await jsonOf(chat, `${base}/cgi-bin/token?${query}`, { method: 'GET' });
      if (typeof auth.access_token !== 'string') throw new Error(`WeChat token request failed: ${String(auth.errmsg ?? auth.errcode)}`);
      await jsonOf(chat, `${base}/cgi-bin/message/custom/send?access_token=${encodeURIComponent(auth.access_token)}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ touser: user, msgtype: 'text', text: { content: text } }),
      });
    };

    defineChannelRoute(scope, ['imC', 'offiaccount'], {
      summary: 'WeChat official account callback of a channel link (signature check, echostr, text messages)',
      tags: ['outLink'],
      handler: async ({ request, reply }) => {
        const { token } = parseWith(tokenParam, request.params);
        const link = await channelLink(chat, token, 'official_account');
        const q = request.query as Record<string, unknown>;
        const callbackToken = str(link.app?.CallbackToken);
        if (!callbackToken) throw Errors.channelLinkRefused('This link has no CallbackToken');
        if (!sameText(sha1Signature([callbackToken, str(q.timestamp), str(q.nonce)]), str(q.signature))) throw Errors.channelLinkRefused('The signature does not match');
        if (request.method === 'GET') return reply.type('text/plain').send(str(q.echostr));
        const message = parseFlatXml(str(request.body));
        if (message.MsgType === 'text' && message.FromUserName && message.Content && (await firstDelivery(link, message.MsgId))) {
          const user = message.FromUserName;
          background(async () => {
            if (link.immediateResponse) await wechatSend(link, user, link.immediateResponse);
            const answer = await runChannelTurn(chat, link, { uid: user, chatId: channelChatId('wechat', link, user), text: message.Content!, channel: 'official_account' }, logTurnFailure);
            if (answer) await wechatSend(link, user, answer);
          });
        }
        return reply.type('text/plain').send('success');
      },
    });
  });
}
