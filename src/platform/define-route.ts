import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import type { z } from 'zod';
import { Errors } from '../infra/errors.js';
import { describeZodError } from '../infra/error-render.js';
import { assertSafeInput } from '../infra/input-guard.js';
import type { AuthContext, AuthKind } from './auth/types.js';

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
  /** Parameters, read from query, path and JSON body merged (body wins). */
  input?: S;
  summary?: string;
  tags?: string[];
  response?: z.ZodType;
  /** The handler writes the reply itself (files, streams, plain JSON); no envelope. */
  raw?: boolean;
  handler: (
    context: PlatformHandlerContext<S extends z.ZodType ? z.output<S> : undefined, K extends readonly [] ? null : AuthContext>,
  ) => Promise<R>;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !Buffer.isBuffer(value);
}

/**
 * The reference reads ids from the query of some POSTs and clients send GET parameters as
 * bodies; merging query, path and body lets one schema serve every method of a route.
 */
export function mergedInput(request: FastifyRequest): Record<string, unknown> {
  return {
    ...(isPlainObject(request.query) ? request.query : {}),
    ...(isPlainObject(request.params) ? request.params : {}),
    ...(isPlainObject(request.body) ? request.body : {}),
  };
}

/**
 * Validates input with its schema. Strings holding U+0000 are refused here too, for values that
 * do not come through the request hook (JSON fields of multipart forms).
 */
export function parseWith<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  assertSafeInput(value);
  const result = schema.safeParse(value);
  if (!result.success) throw Errors.missingParams(describeZodError(result.error));
  return result.data;
}

/** Registers one platform route: authenticate, validate, run, wrap in the envelope. */
export function definePlatformRoute<S extends z.ZodType | undefined, const K extends readonly AuthKind[], R>(
  app: FastifyInstance,
  options: PlatformRouteOptions<S, K, R>,
): void {
  app.route({
    method: options.methods,
    url: options.url,
    config: {
      docs: {
        summary: options.summary,
        tags: options.tags,
        input: options.input,
        auth: options.auth,
        response: options.response,
        enveloped: !options.raw,
      },
    },
    handler: async (request, reply) => {
      const auth = options.auth.length > 0 ? await app.platformAuth.authenticate(request, options.auth) : null;
      if (auth?.authType === 'apikey' && auth.appId && !options.appBoundKey) throw Errors.appBoundKeyRefused(auth.appId);
      const input = options.input ? parseWith(options.input, mergedInput(request)) : undefined;
      const data = await options.handler({ input, auth, request, reply } as never);
      if (options.raw || reply.sent) return reply;
      return reply.send({ code: 200, statusText: '', message: '', data: data ?? null });
    },
  });
}
