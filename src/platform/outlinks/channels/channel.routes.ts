/**
 * Messaging-channel receivers, each served at the specification's name (imA, imB, imC) and at
 * the reference's real path (feishu, wecom, offiaccount), which users paste into the channel
 * consoles. Each verifies the link token and the channel's signature, answers the
 * channel's URL verification, and hands an incoming text message off as a stored job: the link's
 * app answers it in the background, on this replica or, if this one stops, on another
 * (channel-jobs.ts), and the answer goes back through the channel's API (channel-senders.ts).
 * See docs/chat.md.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { startPeriodicTask } from '../../../infra/backoff.js';
import { Errors } from '../../../infra/errors.js';
import type { ChatModule } from '../../chat/chat-module.js';
import { definePlatformRoute, type PlatformRouteOptions, parseWith } from '../../define-route.js';
import type { OutLinkDoc, OutLinkType } from '../outlinks.repo.js';
import type { ChannelEventsRepo } from './channel-events.repo.js';
import { parseFlatXml, sameText, sha1Signature, wecomDecrypt, withinSignatureWindow } from './channel-crypto.js';
import { keepRawJsonBodies, openFeishuEvent } from './channel-feishu.js';
import { createChannelJobs } from './channel-jobs.js';
import { channelChatId } from './channel-runner.js';
import { str } from './channel-senders.js';
import { channelDrainBudgetMs, createChannelTurns } from './channel-turns.js';

const tokenParam = z.object({ token: z.string().min(1).max(100) });

async function channelLink(chat: ChatModule, token: string, type: OutLinkType): Promise<OutLinkDoc> {
  const link = await chat.outLinks.findByShareId(token);
  if (link.type !== type) throw Errors.channelLinkRefused(`This link is not a ${type} channel`);
  return link;
}

/** One receiver at both of its paths: `/support/outLink/{name}/:token`. */
function defineChannelRoute(app: FastifyInstance, names: [string, string], options: Omit<PlatformRouteOptions<undefined, [], unknown>, 'url' | 'methods' | 'auth' | 'raw'>): void {
  for (const name of names) {
    // GET is the consoles' URL verification (echostr), POST carries the events.
    definePlatformRoute(app, { ...options, methods: ['GET', 'POST'], url: `/support/outLink/${name}/:token`, auth: [], raw: true });
  }
}

/**
 * Channel turns of this process, and the sweep that takes over the turns a stopped process left
 * (channel-jobs.ts): started with the app, stopped when it closes.
 */
function startChannelJobs(app: FastifyInstance, chat: ChatModule, events: ChannelEventsRepo) {
  const turns = createChannelTurns((error) => app.log.warn({ err: error }, 'messaging channel delivery failed'), channelDrainBudgetMs(app.config.SHUTDOWN_TIMEOUT_MS));
  const withError = (error: unknown) => (error === undefined ? {} : { err: error });
  const jobs = createChannelJobs({
    repo: events,
    chat,
    turns,
    now: () => app.identity.clock.now(),
    leaseMs: app.config.CHANNEL_TURN_LEASE_MS,
    log: {
      info: (message) => app.log.info(message),
      warn: (message, error) => app.log.warn(withError(error), message),
      error: (message, error) => app.log.error(withError(error), message),
    },
  });
  let sweep: { stop(): void } | undefined;
  app.startup.add('messaging channels: sweep of interrupted turns', async () => {
    sweep = startPeriodicTask({
      name: 'messaging channel turn sweep',
      intervalMs: app.config.CHANNEL_TURN_SWEEP_MS,
      task: () => jobs.sweep(),
      log: app.log,
      onFailure: (error) => app.opsMetrics.databaseError('outlink-channel-turn-sweep', error),
    });
  });
  app.addHook('preClose', async () => {
    sweep?.stop();
    turns.beginClose();
  });
  app.addHook('onClose', () => turns.drain());
  return { turns, jobs };
}

export function registerChannelRoutes(app: FastifyInstance, chat: ChatModule, events: ChannelEventsRepo): void {
  const { turns, jobs } = startChannelJobs(app, chat, events);
  // A message that comes while this process closes is refused before its id is claimed: Feishu,
  // WeCom and WeChat deliver again an event answered with a non-2xx status (by then to a replica
  // still running), where one acknowledged and claimed here might wait a lease for its answer.
  // A request that starts after the close began gets the closing 503 from the first hook (app.ts);
  // each receiver's `turns.closing` check covers those already inside a handler then.

  /** WeChat and WeCom sign a timestamp (seconds): a signature is good within its window only. */
  const assertFresh = (timestamp: unknown) => {
    if (!withinSignatureWindow(str(timestamp), app.identity.clock.now())) throw Errors.channelLinkRefused('The signature’s timestamp is more than 5 minutes away from this server’s clock');
  };

  // ---- imA: Feishu / Lark (JSON events, optional encryption and signature) ----
  app.register(async (scope) => {
    keepRawJsonBodies(scope);
    defineChannelRoute(scope, ['imA', 'feishu'], {
      summary: 'Feishu/Lark event receiver of a channel link (url_verification and im.message.receive_v1)',
      tags: ['outLink'],
      handler: async ({ request, reply }) => {
        const { token } = parseWith(tokenParam, request.params);
        const link = await channelLink(chat, token, 'feishu');
        if (request.method === 'GET') return reply.send({});
        if (turns.closing) throw Errors.shuttingDown();
        const body = openFeishuEvent(request, link, app.identity.clock.now());
        if (body.type === 'url_verification') return reply.send({ challenge: body.challenge });
        const header = (body.header ?? {}) as Record<string, unknown>;
        const event = (body.event ?? {}) as { message?: Record<string, unknown>; sender?: { sender_id?: Record<string, unknown> } };
        const eventId = str(header.event_id);
        if (header.event_type !== 'im.message.receive_v1' || event.message?.message_type !== 'text') return reply.send({});
        let text = '';
        try {
          text = str((JSON.parse(str(event.message.content)) as { text?: unknown }).text).replace(/@_user_\d+/g, '').trim();
        } catch {
          text = '';
        }
        const messageId = str(event.message.message_id);
        const uid = str(event.sender?.sender_id?.open_id) || str(event.message.chat_id);
        if (text && messageId) {
          const chatId = channelChatId('feishu', link, str(event.message.chat_id) || uid);
          await jobs.deliver(link, eventId, { uid, chatId, text, channel: 'feishu', to: messageId });
        }
        return reply.send({});
      },
    });
  });

  // XML bodies (WeChat, WeCom) arrive as text; only these routes need them.
  app.register(async (scope) => {
    scope.addContentTypeParser(['text/xml', 'application/xml'], { parseAs: 'string' }, (_request, body, done) => done(null, body));

    // ---- imB: WeCom (always encrypted) ----
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
          assertFresh(q.timestamp);
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
        if (turns.closing) throw Errors.shuttingDown();
        const outer = parseFlatXml(str(request.body));
        const message = parseFlatXml(verify(outer.Encrypt ?? ''));
        if (message.MsgType === 'text' && message.FromUserName && message.Content) {
          const user = message.FromUserName;
          await jobs.deliver(link, message.MsgId, { uid: user, chatId: channelChatId('wecom', link, user), text: message.Content, channel: 'wecom', to: user });
        }
        return reply.type('text/plain').send('');
      },
    });

    // ---- imC: WeChat official account (plaintext mode) ----
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
        // The signature covers no body (plaintext mode): its age alone bounds how long a
        // captured query string can carry other messages.
        assertFresh(q.timestamp);
        if (request.method === 'GET') return reply.type('text/plain').send(str(q.echostr));
        if (turns.closing) throw Errors.shuttingDown();
        const message = parseFlatXml(str(request.body));
        if (message.MsgType === 'text' && message.FromUserName && message.Content) {
          const user = message.FromUserName;
          await jobs.deliver(link, message.MsgId, { uid: user, chatId: channelChatId('wechat', link, user), text: message.Content, channel: 'official_account', to: user });
        }
        return reply.type('text/plain').send('success');
      },
    });
  });
}
