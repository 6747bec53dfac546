/**
 * The body limit of the OpenAI-style routes (v1/chat/completions, v1/embeddings), chosen per
 * request before its body is read: a request whose headers prove an API key or a login session
 * may send API_BODY_LIMIT_BYTES (photos inline as data URLs, as the reference allows on
 * completions; an SDK's batch of embedding inputs); any other (no credential, a wrong one, a share
 * or team-space visitor, whose credentials are in the body) keeps BODY_LIMIT_BYTES and gets the
 * same 413 as every route, without more of its body being read. A request let in with the larger
 * limit whose caller turns out to be of another kind once the body is read (a share id next to a
 * valid key: the link's credential comes first) gets that 413 too.
 */
import { Transform, type TransformCallback } from 'node:stream';
import { errorCodes, type FastifyInstance, type FastifyRequest, type preParsingAsyncHookHandler, type preValidationAsyncHookHandler, type RouteOptions } from 'fastify';
import { headersProveCaller } from './body-credentials.js';
import type { AuthKind, AuthType } from './types.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The body passed BODY_LIMIT_BYTES under the larger limit its headers' credential earned. */
    bodyAboveDefaultLimit: boolean;
  }
}

/** The credentials proven from headers alone that earn the larger limit. */
const LARGE_BODY_KINDS: readonly AuthKind[] = ['apiKey', 'session'];
/** What those kinds resolve to, checked again once the route authenticated the caller. */
const LARGE_BODY_AUTH_TYPES: ReadonlySet<AuthType> = new Set(['apikey', 'token']);

const tooLarge = () => new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE();

/**
 * Passes a body on, counting it: past `limit` it fails with the framework's 413 (the parser then
 * answers and closes the connection; nothing more is read), past `mark` it calls `marked` once.
 */
class CountedBody extends Transform {
  private received = 0;
  constructor(
    private readonly limit: number,
    private readonly mark: number,
    private readonly marked: () => void,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    const before = this.received;
    this.received += chunk.length;
    if (this.received > this.limit) callback(tooLarge());
    else {
      if (before <= this.mark && this.received > this.mark) this.marked();
      callback(null, chunk);
    }
  }
}

/** Routes the calling context registers after this whose path is one of `urls` (POST) get the per-request limit. */
export function boundBodiesByCaller(app: FastifyInstance, urls: readonly string[]): void {
  const defaultLimit = app.config.BODY_LIMIT_BYTES;
  const largeLimit = Math.max(app.config.API_BODY_LIMIT_BYTES, defaultLimit);
  if (largeLimit === defaultLimit) return;
  if (!app.hasRequestDecorator('bodyAboveDefaultLimit')) app.decorateRequest('bodyAboveDefaultLimit', false);

  const chooseLimit: preParsingAsyncHookHandler = async (request, reply, payload) => {
    const proven = await headersProveCaller(app, request, LARGE_BODY_KINDS);
    const limit = proven ? largeLimit : defaultLimit;
    if (Number(request.headers['content-length']) > limit) {
      // As the parser does for a body too large: else Node reads (and drops) the rest to keep the
      // connection. Refused here, before any count starts (the parser's own length check answers
      // without listening to the stream it was given).
      reply.header('connection', 'close');
      throw tooLarge();
    }
    const counted = new CountedBody(limit, defaultLimit, () => {
      request.bodyAboveDefaultLimit = true;
    });
    // The parser listens for the count's failure while it reads; one raised once it stopped
    // listening (it answered already) must not end the process as an uncaught stream error.
    counted.on('error', () => payload.unpipe(counted));
    // Not `pipeline`: a failed count would destroy the request, and with it the socket the 413 goes out on.
    payload.on('error', (error) => counted.destroy(error));
    return payload.pipe(counted);
  };

  // After the route's own authentication (its preValidation hook comes first).
  const confirmCaller: preValidationAsyncHookHandler = async (request: FastifyRequest) => {
    if (!request.bodyAboveDefaultLimit) return;
    const authType = request.platformCaller?.authType;
    if (!authType || !LARGE_BODY_AUTH_TYPES.has(authType)) throw tooLarge();
  };

  const paths = new Set(urls);
  app.addHook('onRoute', (route: RouteOptions) => {
    if (!paths.has(route.url) || route.method !== 'POST') return;
    route.bodyLimit = largeLimit;
    route.preParsing = [...asList(route.preParsing), chooseLimit];
    route.preValidation = [...asList(route.preValidation), confirmCaller];
  });
}

function asList<T>(hooks: T | T[] | undefined): T[] {
  return hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks];
}
