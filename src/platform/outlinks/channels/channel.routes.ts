/**
 * Messaging-channel receivers, each served at the specification's name (imA, imB, imC) and at
 * the reference's real path (feishu, wecom, offiaccount), which users paste into the channel
 * consoles. Each verifies the link token and the channel's signature, answers the
 * channel's URL verification, and hands an incoming text message off as a stored job: the link's
 * app answers it in the background, on this replica or, if this one stops, on another
 * (channel-jobs.ts), and the answer goes back through the channel's API (channel-senders.ts).
 * Each channel's checks and decoding sit next to it (channel-feishu.ts, channel-wecom.ts,
 * channel-wechat.ts): the handlers here only order them around the close check.
 * See docs/chat.md.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { startPeriodicTask } from '../../../infra/backoff.js';
import { Errors } from '../../../infra/errors.js';
import type { ChatServices } from '../../chat/chat-module.js';
import { definePlatformRoute, type PlatformRouteOptions, parseWith } from '../../define-route.js';
import type { OutLinkDoc, OutLinkType } from '../outlinks.repo.js';
import type { ChannelEventsRepo } from './channel-events.repo.js';
import type { ChannelPlacesRepo } from './channel-places.repo.js';
import { keepRawJsonBodies, parseFeishuEvent } from './channel-feishu.js';
import { createChannelJobs } from './channel-jobs.js';
import { createChannelTokens } from './channel-senders.js';
import { createChannelTokensRepo } from './channel-tokens.repo.js';
import { channelTurnsPerLink } from './channel-turn-gate.js';
import { channelDrainBudgetMs, createChannelTurns } from './channel-turns.js';
import { parseWechatCallback } from './channel-wechat.js';
import { type ChannelCallback, parseWecomCallback } from './channel-wecom.js';

const tokenParam = z.object({ token: z.string().min(1).max(100) });

/** The largest WeChat / WeCom callback body taken (their messages are under 4 KiB). */
export const XML_CALLBACK_BODY_LIMIT = 64 * 1024;
const xmlTooLarge = () => Errors.payloadTooLarge(`A WeChat or WeCom callback body is at most ${XML_CALLBACK_BODY_LIMIT} bytes`);

async function channelLink(chat: ChatServices, token: string, type: OutLinkType): Promise<OutLinkDoc> {
  const link = await chat.outLinks.findByShareId(token);
  if (link.type !== type) throw Errors.channelLinkRefused(`This link is not a ${type} channel`);
  return link;
}

/** One receiver at both of its paths: `/support/outLink/{name}/:token`. */
type ChannelRouteOptions = Omit<PlatformRouteOptions<undefined, [], unknown>, 'url' | 'methods' | 'auth' | 'raw'>;
type ChannelHandler = ChannelRouteOptions['handler'];

function defineChannelRoute(app: FastifyInstance, names: [string, string], options: ChannelRouteOptions): void {
  for (const name of names) {
    // GET is the consoles' URL verification (echostr), POST carries the events.
    definePlatformRoute(app, { ...options, methods: ['GET', 'POST'], url: `/support/outLink/${name}/:token`, auth: [], raw: true });
  }
}

/**
 * Channel turns of this process, and the sweep that takes over the turns a stopped process left
 * (channel-jobs.ts): started with the app, stopped when it closes.
 */
function startChannelJobs(app: FastifyInstance, chat: ChatServices, events: ChannelEventsRepo, places: ChannelPlacesRepo) {
  const turns = createChannelTurns((error) => app.log.warn({ err: error }, 'messaging channel delivery failed'), channelDrainBudgetMs(app.config.SHUTDOWN_TIMEOUT_MS));
  const withError = (error: unknown) => (error === undefined ? {} : { err: error });
  const now = () => app.identity.clock.now();
  const tokens = createChannelTokens(createChannelTokensRepo(app.mongo.db), now, (message, error) => app.log.warn({ err: error }, message));
  const jobs = createChannelJobs({
    repo: events,
    places,
    chat,
    tokens,
    turns,
    now,
    leaseMs: app.config.CHANNEL_TURN_LEASE_MS,
    maxRunning: app.config.CHANNEL_TURNS_MAX,
    perLink: channelTurnsPerLink(app.config.CHANNEL_TURNS_MAX, app.config.CHANNEL_TURNS_PER_LINK),
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

export function registerChannelRoutes(app: FastifyInstance, chat: ChatServices, events: ChannelEventsRepo, places: ChannelPlacesRepo): void {
  const { turns, jobs } = startChannelJobs(app, chat, events, places);
  const now = () => app.identity.clock.now();
  const linkOf = (request: FastifyRequest, type: OutLinkType) => channelLink(chat, parseWith(tokenParam, request.params).token, type);
  // A message that comes while this process closes is refused before its id is claimed: Feishu,
  // WeCom and WeChat deliver again an event answered with a non-2xx status (by then to a replica
  // still running), where one acknowledged and claimed here might wait a lease for its answer.
  // A request that starts after the close began gets the closing 503 from the first hook (app.ts);
  // each receiver's `turns.closing` check covers those already inside a handler then.
  const assertOpen = () => {
    if (turns.closing) throw Errors.shuttingDown();
  };

  // ---- imA: Feishu / Lark (JSON events, optional encryption and signature) ----
  app.register(async (scope) => {
    keepRawJsonBodies(scope);
    defineChannelRoute(scope, ['imA', 'feishu'], {
      summary: 'Feishu/Lark event receiver of a channel link (url_verification and im.message.receive_v1)',
      tags: ['outLink'],
      handler: async ({ request, reply }) => {
        const link = await linkOf(request, 'feishu');
        if (request.method === 'GET') return reply.send({});
        assertOpen();
        const event = parseFeishuEvent(request, link, now());
        if ('challenge' in event) return reply.send({ challenge: event.challenge });
        if (event.delivery) await jobs.deliver(link, event.delivery);
        return reply.send({});
      },
    });
  });

  // XML bodies (WeChat, WeCom) arrive as text; only these routes need them.
  app.register(async (scope) => {
    // Their messages are a few kB, and the body is read before its signature is checked: refused
    // early past XML_CALLBACK_BODY_LIMIT (by its length when declared, else as it streams in).
    scope.addHook('onRequest', async (request) => {
      if (Number(request.headers['content-length'] ?? 0) > XML_CALLBACK_BODY_LIMIT) throw xmlTooLarge();
    });
    scope.addContentTypeParser(['text/xml', 'application/xml'], { parseAs: 'string', bodyLimit: XML_CALLBACK_BODY_LIMIT }, (_request, body, done) => done(null, body));

    /** WeCom and WeChat callbacks: the echostr check on GET, a message on POST, acknowledged with `ack`. */
    const xmlChannel = (type: OutLinkType, parse: (request: FastifyRequest, link: OutLinkDoc, nowMs: number) => ChannelCallback, ack: string): ChannelHandler => async ({ request, reply }) => {
      const link = await linkOf(request, type);
      const callback = parse(request, link, now());
      if (request.method === 'GET') return reply.type('text/plain').send(callback.echo());
      assertOpen();
      const delivery = callback.message();
      if (delivery) await jobs.deliver(link, delivery);
      return reply.type('text/plain').send(ack);
    };
    // ---- imB: WeCom (always encrypted) ----
    defineChannelRoute(scope, ['imB', 'wecom'], {
      summary: 'WeCom callback of a channel link (echostr verification and encrypted text messages)',
      tags: ['outLink'],
      handler: xmlChannel('wecom', parseWecomCallback, ''),
    });
    // ---- imC: WeChat official account (plaintext or safe mode) ----
    defineChannelRoute(scope, ['imC', 'offiaccount'], {
      summary: 'WeChat official account callback of a channel link (signature check, echostr, text messages)',
      tags: ['outLink'],
      handler: xmlChannel('official_account', parseWechatCallback, 'success'),
    });
  });
}
