import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply } from 'fastify';
import type { Logger } from 'pino';
import { randomUUID } from 'node:crypto';
import clusterApi from './cluster/index.js';
import type { Config } from './config.js';
import { errorAnswer, MAX_PATH_PARAM_LENGTH } from './infra/error-render.js';
import { Errors } from './infra/errors.js';
import { createLogger } from './infra/logger.js';
import { lazyRequestLogger } from './infra/request-logger.js';
import { platformRoutes, platformServices } from './platform/index.js';
import answerMemo from './plugins/answer-memo.js';
import { answerClientError } from './plugins/client-errors.js';
import docs from './plugins/docs.js';
import errorHandler from './plugins/error-handler.js';
import health from './plugins/health.js';
import metrics from './plugins/metrics.js';
import mongo from './plugins/mongo.js';
import openapi from './plugins/openapi.js';
import requestBody from './plugins/request-body.js';
import routeSchemas from './plugins/route-schemas.js';
import securityHeaders from './plugins/security-headers.js';
import startup from './plugins/startup.js';

declare module 'fastify' {
  interface FastifyInstance {
    config: Config;
  }
}

export interface BuildAppOptions {
  logger?: Logger;
  /** Run start-up tasks (indexes, seed data, workers) when ready. Default true. */
  startupTasks?: boolean;
}

/** How often a closing server closes the keep-alive connections that went idle since the close began. */
const IDLE_SWEEP_MS = 50;

/** Trusts the first `hops` proxies in front of the service (Fastify's hop-count form). */
function trustHops(hops: number) {
  return (_address: string, hop: number) => hop < hops;
}

/** Answers above this size may wait in this process's memory for a client that reads slowly or not at all. */
const BUFFERED_ANSWER_BYTES = 256 * 1024;

/** Whether an answer may outgrow the socket's buffers (a large body, or a stream of unknown size). */
function holdsMemoryUntilRead(payload: unknown): boolean {
  if (typeof payload === 'string') return payload.length > BUFFERED_ANSWER_BYTES / 3;
  if (Buffer.isBuffer(payload)) return payload.length > BUFFERED_ANSWER_BYTES;
  return payload !== null && payload !== undefined;
}

/** Builds the whole service; nothing listens until server.ts says so. */
export async function buildApp(config: Config, options: BuildAppOptions = {}): Promise<FastifyInstance> {
  const app: FastifyInstance = Fastify({
    loggerInstance: (options.logger ?? createLogger(config.LOG_LEVEL)) as FastifyBaseLogger,
    bodyLimit: config.BODY_LIMIT_BYTES,
    requestIdHeader: 'x-request-id',
    genReqId: () => randomUUID(),
    childLoggerFactory: lazyRequestLogger,
    forceCloseConnections: 'idle',
    // Receiving a whole request (headers and body; not the answer) is bounded: a sender trickling
    // an upload cannot hold its memory, or a place for uploads not yet authenticated, for ever.
    requestTimeout: config.REQUEST_TIMEOUT_MS,
    // Behind a reverse proxy: the client's address (login limits) and https (Secure cookies).
    trustProxy: typeof config.TRUST_PROXY === 'number' ? trustHops(config.TRUST_PROXY) : config.TRUST_PROXY,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PATH_PARAM_LENGTH },
    // The router's own refusals skip the error handler: same bodies as every other error.
    frameworkErrors: (error, request, routerReply) => {
      const reply = routerReply as FastifyReply;
      const { rendered } = errorAnswer(error, request, { refused: 'request refused by the router', fields: { code: error.code } });
      app.applySecurityHeaders(request, reply);
      return reply.code(rendered.status).headers(rendered.headers).header('x-request-id', request.id).send(rendered.body);
    },
    // The HTTP parser's refusals (431, 400, 408) too, answered on the socket (plugins/client-errors.ts).
    clientErrorHandler: (error, socket) => answerClientError(app, error, socket),
    // A request routed once the close began is refused by the hook below, in the URL's format.
    return503OnClosing: false,
    // Start-up tasks run in one onReady hook, which Fastify bounds by this (default 10 s): the
    // database may come up late (30 s) and interrupted permission changes wait for a crashed
    // holder's tree lock (up to 15 s). Each task bounds its own wait.
    pluginTimeout: 120_000,
  });
  // Node measures a request against its headers timeout (60 s) when that is the longer of the two.
  app.server.headersTimeout = Math.min(app.server.headersTimeout, config.REQUEST_TIMEOUT_MS);
  app.decorate('config', config);
  // While closing, in-flight responses end their keep-alive connection so close() can finish.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
    if (!app.server.listening) return;
    // A stream (SSE) sent its headers before the close began, so no `connection: close` reaches
    // its client: once it ends, its connection sits idle and would hold close() until the
    // shutdown timeout. Node closes only the connections idle when close() is called; these too.
    const sweep = setInterval(() => app.server.closeIdleConnections(), IDLE_SWEEP_MS);
    sweep.unref();
    app.server.once('close', () => clearInterval(sweep));
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('x-request-id', request.id);
    if (closing) reply.header('connection', 'close');
    // A large answer is ready: from here its connection only carries it out. One on which
    // nothing moves for this long (a client that stopped reading holds the answer in memory) is
    // closed (Node destroys a socket whose timeout nobody handles); once the answer is out,
    // Node's keep-alive timeout replaces this one. A small answer fits the socket's buffers and
    // costs no timer (every request would pay for it). Streamed chat answers watch their own (chat/sse.ts).
    if (holdsMemoryUntilRead(payload)) request.raw.socket?.setTimeout?.(config.RESPONSE_STALL_TIMEOUT_MS);
    done(null, payload);
  });

  // A request routed once the close began is refused (503 with Retry-After, in the URL's format,
  // with the security headers): a client or the load balancer sends it again to another process.
  await app.register(securityHeaders, { refusal: () => (closing ? Errors.shuttingDown() : undefined) });
  await app.register(answerMemo);
  await app.register(errorHandler);
  // Before any route: request metrics are collected for every route registered after it.
  await app.register(metrics);
  await app.register(requestBody);
  await app.register(routeSchemas);
  await app.register(openapi);
  // After the document's producer: the page finds it registered (or stands in for it).
  await app.register(docs);
  await app.register(startup, { enabled: options.startupTasks ?? true });
  await app.register(mongo, { uri: config.MONGODB_URI });
  await app.register(health);
  await app.register(platformServices);
  await app.register(platformRoutes, { prefix: '/api' });
  await app.register(clusterApi);
  return app;
}
