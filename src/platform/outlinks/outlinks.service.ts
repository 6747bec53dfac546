/**
 * Share links: CRUD, the `outLink` credential (shareId + outLinkUid) and the
 * limits and identity hooks the reference leaves to its commercial service (§8.3–8.4), which we
 * enforce: expiry, usage points, QPM, hookUrl init/start/finish.
 */
import type { FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { expired, usedUp } from '../../domain/credential-limits.js';
import { LruMap } from '../../infra/lru-map.js';
import { Errors } from '../../infra/errors.js';
import type { SafeFetchOptions, SafeFetchResponse } from '../../infra/outbound-fetch.js';
import type { AppsAccess } from '../apps/index.js';
import type { AuthContext } from '../auth/types.js';
import { shareIdToken } from '../chat/ids.js';
import { mergedInput, startsShareChat } from '../define-route.js';
import type { OutLinkDoc, OutLinksRepo } from './outlinks.repo.js';
import type { createOutLinkSchema, updateOutLinkSchema } from './outlinks.schema.js';
import type { ShareQpmLimiter } from './qpm-limiter.js';
import { joinUrl } from '../../infra/join-url.js';

export interface OutLinkServiceDeps {
  repo: OutLinksRepo;
  apps: Pick<AppsAccess, 'authorize' | 'authorizeToView' | 'confirmDependentWrite'>;
  now: () => number;
  /** Builds the link creator's auth context (team member of the link's team). */
  memberContext: (tmbId: string) => Promise<Omit<AuthContext, 'authType'> | null>;
  fetch: (url: string, options: SafeFetchOptions) => Promise<SafeFetchResponse>;
  /** The shared per-minute count of chat starts (qpm-limiter.ts). */
  qpm: Pick<ShareQpmLimiter, 'take'>;
}

export function serializeOutLink(doc: OutLinkDoc) {
  return {
    _id: doc._id,
    shareId: doc.shareId,
    teamId: doc.teamId,
    tmbId: doc.tmbId,
    appId: doc.appId,
    type: doc.type,
    name: doc.name,
    usagePoints: doc.usagePoints,
    lastTime: doc.lastTime,
    responseDetail: doc.responseDetail,
    limit: doc.limit,
    app: doc.app,
    immediateResponse: doc.immediateResponse,
    defaultResponse: doc.defaultResponse,
  };
}

/** A free turn writes the link's `lastTime` at most this often. */
export const LINK_TOUCH_INTERVAL_MS = 60_000;

/** The link types a visitor may use as a web credential (shareId + outLinkUid). */
const WEB_LINK_TYPES = new Set<string>(['share', 'iframe']);

export function createOutLinkService(deps: OutLinkServiceDeps) {
  const lastTouched = new LruMap<number>(10_000);
  /** The link each share-link credential was resolved from, for the rest of its request. */
  const linksOfContexts = new WeakMap<AuthContext, OutLinkDoc>();

  async function linkInTeam(auth: AuthContext, id: string): Promise<OutLinkDoc> {
    const link = await deps.repo.findById(id);
    if (!link) throw Errors.outlinkUnExist(`Share link ${id} not found`);
    if (link.teamId !== auth.teamId) throw Errors.unAuthLink(`Share link ${id} belongs to another team`);
    return link;
  }

  /**
   * POSTs to the link's hook; the reply must be `{success:true, data:{uid}}` (`init`), or
   * `{success:true}` with an optional uid (`start`: the token is the uid then).
   */
  async function callHook(link: OutLinkDoc, path: string, body: Record<string, unknown>, uidRequired = true): Promise<string | undefined> {
    const base = link.limit.hookUrl;
    if (!base) return undefined;
    let response: SafeFetchResponse;
    try {
      response = await deps.fetch(joinUrl(base, path), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), timeoutMs: 10_000 });
    } catch (error) {
      throw Errors.linkUnInvalid(`The share link's auth hook failed: ${(error as Error).message}`);
    }
    let parsed: { success?: boolean; message?: string; msg?: string; data?: { uid?: unknown } };
    try {
      parsed = JSON.parse(response.text());
    } catch {
      throw Errors.linkUnInvalid("The share link's auth hook answered with invalid JSON");
    }
    if (!parsed?.success) throw Errors.linkUnInvalid(parsed?.message || parsed?.msg || "The share link's auth hook refused this user");
    const uid = parsed.data?.uid;
    if (typeof uid === 'string' && uid !== '') return uid;
    if (uidRequired) throw Errors.linkUnInvalid("The share link's auth hook returned no uid");
    return undefined;
  }

  /** Expiry and points: what a link must pass before anything through it calls a model. */
  function assertMaySpend(link: OutLinkDoc): void {
    const { expiredTime, maxUsagePoints } = link.limit;
    if (expiredTime && expired(expiredTime, deps.now())) throw Errors.linkUnInvalid(`The share link expired at ${new Date(expiredTime).toISOString()}`);
    if (usedUp(maxUsagePoints, link.usagePoints)) throw Errors.linkUnInvalid(`The share link has used all of its ${maxUsagePoints} usage points`);
  }

  const service = {
    async create(auth: AuthContext, body: z.output<typeof createOutLinkSchema>): Promise<string> {
      await deps.apps.authorize(auth, body.appId, 'manage');
      const shareId = shareIdToken();
      const id = await deps.repo.insert({
        shareId,
        teamId: auth.teamId,
        tmbId: auth.tmbId,
        appId: body.appId,
        type: body.type,
        name: body.name,
        responseDetail: body.responseDetail ?? false,
        limit: {
          maxUsagePoints: body.limit?.maxUsagePoints ?? -1,
          // The schema default of the reference (its web client sends 100).
          QPM: body.limit?.QPM ?? 1000,
          ...(body.limit?.expiredTime ? { expiredTime: body.limit.expiredTime } : {}),
          ...(body.limit?.hookUrl ? { hookUrl: body.limit.hookUrl } : {}),
        },
        app: body.app,
        immediateResponse: body.immediateResponse,
        defaultResponse: body.defaultResponse,
      });
      // The app may have been deleted since the check: then the link goes with it (404).
      await deps.apps.confirmDependentWrite(auth.teamId, body.appId);
      return id;
    },

    async list(auth: AuthContext, appId: string, type: string) {
      await deps.apps.authorizeToView(auth, appId, 'manage');
      return (await deps.repo.list(auth.teamId, appId, type)).map(serializeOutLink);
    },

    async update(auth: AuthContext, body: z.output<typeof updateOutLinkSchema>): Promise<void> {
      const link = await linkInTeam(auth, body._id);
      await deps.apps.authorize(auth, link.appId, 'owner');
      const limit = body.limit
        ? {
            maxUsagePoints: body.limit.maxUsagePoints ?? link.limit.maxUsagePoints,
            QPM: body.limit.QPM ?? link.limit.QPM,
            expiredTime: body.limit.expiredTime === null ? undefined : (body.limit.expiredTime ?? link.limit.expiredTime),
            hookUrl: body.limit.hookUrl === undefined ? link.limit.hookUrl : body.limit.hookUrl || undefined,
          }
        : undefined;
      await deps.repo.update(body._id, {
        name: body.name,
        responseDetail: body.responseDetail,
        limit,
        app: body.app ? { ...(link.app ?? {}), ...body.app } : undefined,
        immediateResponse: body.immediateResponse,
        defaultResponse: body.defaultResponse,
      });
    },

    async remove(auth: AuthContext, id: string): Promise<void> {
      const link = await linkInTeam(auth, id);
      await deps.apps.authorize(auth, link.appId, 'owner');
      await deps.repo.delete(id);
    },

    async findByShareId(shareId: string): Promise<OutLinkDoc> {
      const link = await deps.repo.findByShareId(shareId);
      // The id is a credential (a channel's sits in its receiver URL): never echoed, so never logged.
      if (!link) throw Errors.linkUnInvalid();
      return link;
    },

    /** A link by its id, as read now (a stored channel message names its link so), or null once deleted. */
    findById(id: string): Promise<OutLinkDoc | null> {
      return deps.repo.findById(id);
    },

    /**
     * The link and the caller's uid: the hook's `init` answers it when the link has a hook, except
     * for a chat start, whose `start` call answers it (startChat). An expired link still opens its
     * page and history; only chatting stops (as the reference checks expiry at chat start).
     */
    async authenticate(shareId: string, outLinkUid: string, startsChat = false): Promise<{ link: OutLinkDoc; context: AuthContext }> {
      const link = await deps.repo.findByShareId(shareId);
      // A messaging channel's id sits in the receiver URL given to that platform: it is no web
      // credential (its messages are checked by the channel's signature, which this would skip).
      if (!link || !WEB_LINK_TYPES.has(link.type)) throw Errors.linkUnInvalid();
      const uid = (startsChat ? undefined : await callHook(link, '/shareAuth/init', { token: outLinkUid })) ?? outLinkUid;
      const member = await deps.memberContext(link.tmbId);
      if (!member) throw Errors.linkUnInvalid('The creator of this share link is no longer a member of its team');
      const context: AuthContext = Object.assign({}, member, { authType: 'outLink' as const, appId: link.appId, outLink: { shareId, outLinkUid: uid } });
      linksOfContexts.set(context, link);
      return { link, context };
    },

    /** The share link a request authenticated with, as read then (no second read in the same request). */
    async linkOf(auth: AuthContext): Promise<OutLinkDoc> {
      const shareId = auth.outLink?.shareId;
      if (auth.authType !== 'outLink' || !shareId) throw Errors.linkUnInvalid('This request did not come through a share link');
      return linksOfContexts.get(auth) ?? service.findByShareId(shareId);
    },

    /** The `outLink` credential kind: shareId + outLinkUid in the query or body. */
    resolver: async (request: FastifyRequest): Promise<AuthContext | null> => {
      const input = mergedInput(request);
      const { shareId, outLinkUid } = input;
      if (typeof shareId !== 'string' || shareId === '') return null;
      if (typeof outLinkUid !== 'string' || outLinkUid === '') throw Errors.missingParams("Missing field 'outLinkUid' for the share link");
      return (await service.authenticate(shareId, outLinkUid, startsShareChat(request))).context;
    },

    /**
     * A chat through the link starts: expiry and points, then the hook's `start`, which answers
     * the uid the chat is stored under (the token itself when it names none). Writes nothing.
     */
    async startChat(link: OutLinkDoc, token: string, question: string): Promise<string> {
      assertMaySpend(link);
      if (!link.limit.hookUrl) return token;
      return (await callHook(link, '/shareAuth/start', { token, question }, false)) ?? token;
    },

    /**
     * Outside a chat turn (speech, transcription, the question guide): a caller that came through a
     * link may call a model only while the link is unexpired and has points left. Other callers pass.
     */
    async assertMaySpend(auth: AuthContext): Promise<void> {
      if (auth.authType === 'outLink') assertMaySpend(await service.linkOf(auth));
    },

    /**
     * Takes one of the link's QPM chats of this minute for the visitor's address (the reference
     * counts each IP apart); a chat with no address (a messaging channel) is not counted.
     */
    async takeChatSlot(link: OutLinkDoc, ip: string | undefined): Promise<void> {
      if (link.limit.QPM <= 0 || !ip) return;
      const start = await deps.qpm.take(`${link.shareId}:${ip}`, link.limit.QPM);
      if (!start.ok) throw Errors.tooManyRequest(`The share link allows ${link.limit.QPM} requests per minute`, start.retryAfterSeconds);
    },

    /**
     * Takes one of the link's QPM turns of this minute for its messaging channel, whose users
     * count as one visitor (their messages come from the platform's servers): null when taken or
     * the link is unlimited, else when the next minute starts (a channel message is never refused:
     * it waits).
     */
    async takeChannelTurn(link: OutLinkDoc): Promise<Date | null> {
      if (link.limit.QPM <= 0) return null;
      const start = await deps.qpm.take(`${link.shareId}:channel`, link.limit.QPM);
      return start.ok ? null : new Date(deps.now() + start.retryAfterSeconds * 1000);
    },

    /**
     * A chat turn through the link: its points, and `lastTime` (the reference sets it every turn).
     * A free turn only marks the link used, at most once a minute per link (as API keys'
     * `lastUsedTime`), so free models cost no write per turn.
     */
    async recordUsage(shareId: string, points: number): Promise<void> {
      const now = deps.now();
      if (points <= 0) {
        const last = lastTouched.get(shareId);
        if (last !== undefined && now - last < LINK_TOUCH_INTERVAL_MS) return;
        lastTouched.set(shareId, now);
        await deps.repo.touch(shareId, new Date(now), new Date(now - LINK_TOUCH_INTERVAL_MS));
        return;
      }
      lastTouched.set(shareId, now);
      await deps.repo.addUsage(shareId, points, new Date(now));
    },

    /** Not awaited by callers; the hook's reply is ignored. */
    finish(link: OutLinkDoc, body: Record<string, unknown>): void {
      if (!link.limit.hookUrl) return;
      deps
        .fetch(joinUrl(link.limit.hookUrl, '/shareAuth/finish'), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), timeoutMs: 10_000 })
        .catch(() => undefined);
    },
  };
  return service;
}

export type OutLinkService = ReturnType<typeof createOutLinkService>;
