import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import { z } from 'zod';
import { MemoisedAnswer, sendMemoised } from '../infra/answer-memo.js';
import { Errors } from '../infra/errors.js';
import { describeZodError } from '../infra/error-render.js';
import { assertSafeInput } from '../infra/input-guard.js';
import { safeParseNullAsAbsent } from '../infra/null-as-absent.js';
import { admitBodyBeforeCredentials } from './auth/body-credentials.js';
import type { AuthContext, AuthKind } from './auth/types.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The caller of a platform route, set by its authentication step (null on public routes). */
    platformCaller: AuthContext | null;
  }
}

export interface PlatformHandlerContext<Input, Auth> {
  input: Input;
  auth: Auth;
  request: FastifyRequest;
  reply: FastifyReply;
}

export interface PlatformRouteOptions<S extends z.ZodType | undefined, K extends readonly AuthKind[], R> {
  /** The documented method first, then the methods the reference client uses. */
  methods: HTTPMethods[];
  /** Path relative to /api. */
  url: string;
  /** Credential kinds accepted; an empty list makes the route public. */
  auth: K;
  /**
   * Whether an API key bound to one app may call this route: only that app's chat routes
   * (completions, histories, records, feedback) say yes; everything else needs a global key
   * or a session (docs/decisions.md, app-bound keys).
   */
  appBoundKey?: boolean;
  /**
   * The route starts a chat through a share link (completions): the link's hook is asked `start`
   * for the visitor's uid there, not `init` (startsShareChat).
   */
  startsShareChat?: boolean;
  /**
   * An OpenAI-style route (v1/*): the error handler adds OpenAI's `error` object to its error
   * bodies beside the envelope's fields (withOpenAiError), the only part OpenAI SDKs read.
   */
  openAiErrors?: boolean;
  /**
   * The route authenticates in its handler, once the body is read, because these kinds'
   * credentials may be inside it (multipart fields): a sender whose headers do not already prove
   * one of them waits for a place among the bodies read before their sender is known
   * (auth/body-credentials.ts). Such routes declare `auth: []`.
   */
  credentialsInBody?: readonly AuthKind[];
  /** Parameters, read from query, path and JSON body merged (body wins). */
  input?: S;
  summary?: string;
  tags?: string[];
  /**
   * What the handler returns (the envelope's `data`, or the whole body of a raw route): compiled
   * into the route's serialiser, so it must declare every field a client reads, and open
   * (`looseObject`, `unknown`) wherever the shape is open. A handler may return a
   * `MemoisedAnswer` (infra/answer-memo.ts): its envelope is serialised once per memo key.
   */
  response?: z.ZodType;
  /** The handler writes the reply itself (files, streams, plain JSON); no envelope. */
  raw?: boolean;
  /**
   * A pure read of stored content (a file, an image) that clients probe with HEAD: its GET also
   * answers HEAD, and its answers set their own caching (no default `no-store`). Other GETs answer
   * no HEAD (the 404 of any unserved method): the reference documents GET for routes that change
   * things (deletes, key creation, logout), and HEAD runs the GET's handler.
   */
  head?: boolean;
  handler: (
    context: PlatformHandlerContext<S extends z.ZodType ? z.output<S> : undefined, K extends readonly [] ? null : AuthContext>,
  ) => Promise<R>;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !Buffer.isBuffer(value);
}

/**
 * The caller of a request by the credential kinds a route accepts (an app-bound API key only
 * where the route allows it). Routes that read their credentials from a multipart body call it
 * themselves once the body is read.
 */
export async function authenticateCaller(app: FastifyInstance, request: FastifyRequest, kinds: readonly AuthKind[], appBoundKey = false): Promise<AuthContext> {
  const auth = await app.platformAuth.authenticate(request, kinds);
  if (auth.authType === 'apikey' && auth.appId && !appBoundKey) throw Errors.appBoundKeyRefused(auth.appId);
  return auth;
}

/** Whether the request's route starts a chat through a share link (PlatformRouteOptions.startsShareChat). */
export function startsShareChat(request: FastifyRequest): boolean {
  return (request.routeOptions.config as { startsShareChat?: boolean } | undefined)?.startsShareChat === true;
}

/**
 * The reference reads ids from the query of some POSTs and clients send GET parameters as
 * bodies; merging query, path and body lets one schema serve every method of a route.
 */
export function mergedInput(request: FastifyRequest): Record<string, unknown> {
  return Object.assign(
    {},
    isPlainObject(request.query) ? request.query : undefined,
    isPlainObject(request.params) ? request.params : undefined,
    isPlainObject(request.body) ? request.body : undefined,
  );
}

/**
 * Validates input with its schema, for values that are not a request part (JSON fields of
 * multipart forms, path segments of raw routes). Strings holding U+0000 are refused here too,
 * as the request hook does for the parts themselves.
 */
export function parseWith<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  assertSafeInput(value);
  const result = safeParseNullAsAbsent(schema, value);
  if (!result.success) throw Errors.missingParams(describeZodError(result.error));
  return result.data;
}

/** The platform reply envelope around `data`. */
export function envelopeOf<T extends z.ZodType>(data: T) {
  return z.object({ code: z.number().int(), statusText: z.string(), message: z.string(), data });
}

/** A success in the platform envelope; raw routes that add fields beside it build on this one. */
export const enveloped = (data: unknown) => ({ code: 200, statusText: '', message: '', data: data ?? null });

/** Methods whose parameters are documented (and validated) as the query string; the others take a body. */
const QUERY_METHODS = new Set<HTTPMethods>(['GET', 'HEAD', 'DELETE']);

/**
 * Registers one platform route, once per method, each with its Fastify schema: the input as the
 * query string (GET, DELETE) or the body (the others), the response when declared, and what the
 * OpenAPI document shows. Per request: authenticate (so a caller without credentials gets 401
 * whatever the input), merge query, path and body into the validated part, let Fastify validate
 * it with the zod schema, run the handler, wrap its result in the envelope.
 */
export function definePlatformRoute<S extends z.ZodType | undefined, const K extends readonly AuthKind[], R>(
  app: FastifyInstance,
  options: PlatformRouteOptions<S, K, R>,
): void {
  if (!app.hasRequestDecorator('platformCaller')) app.decorateRequest('platformCaller', null);
  const { input, auth: kinds, credentialsInBody: bodyKinds } = options;
  const response = options.response && (options.raw ? options.response : envelopeOf(options.response));
  const head = options.head === true;

  for (const method of options.methods) {
    const inQuery = QUERY_METHODS.has(method);
    app.route({
      method,
      url: options.url,
      exposeHeadRoute: head,
      schema: {
        summary: options.summary,
        tags: options.tags,
        ...(kinds.length > 0 ? { security: kinds.map((kind) => ({ [kind]: [] })) } : {}),
        ...(input ? { [inQuery ? 'querystring' : 'body']: input } : {}),
        ...(response ? { response: { 200: response } } : {}),
      },
      config: { enveloped: !options.raw, startsShareChat: options.startsShareChat === true, openAiErrors: options.openAiErrors === true, contentRead: head },
      // Before the body is read: a sender the headers do not prove waits for a place (or a 429).
      preParsing: bodyKinds
        ? [
            async (request, reply, payload) => {
              await admitBodyBeforeCredentials(app, request, reply, bodyKinds);
              return payload;
            },
          ]
        : [],
      preValidation: async (request) => {
        if (kinds.length > 0) request.platformCaller = await authenticateCaller(app, request, kinds, options.appBoundKey);
        if (!input) return;
        if (inQuery) request.query = mergedInput(request);
        else request.body = mergedInput(request);
      },
      handler: async (request, reply) => {
        const parsed = input ? (inQuery ? request.query : request.body) : undefined;
        const data = await options.handler({ input: parsed, auth: request.platformCaller, request, reply } as never);
        if (options.raw || reply.sent) return reply;
        if (data instanceof MemoisedAnswer) return sendMemoised(reply, data, enveloped);
        return reply.send(enveloped(data));
      },
    });
  }
}
