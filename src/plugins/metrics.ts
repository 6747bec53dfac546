import { createHash, timingSafeEqual } from 'node:crypto';
// Types only: `schema.hide` keeps the route out of a generated OpenAPI document.
import type {} from '@fastify/swagger';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { Counter, collectDefaultMetrics, Registry } from 'prom-client';
import { isDatabaseUnavailable } from '../infra/database-errors.js';
import { Errors } from '../infra/errors.js';
import { LatencyHistogram } from '../infra/latency-histogram.js';

/** The process's metrics: this app's own registry, and the counters other modules move. */
export interface OpsMetrics {
  /** Modules add their own gauges here (e.g. the training queue, collected on scrape). */
  registry: Registry;
  /** Counts `error` when it is a database outage (`source`: request, readiness or a loop's name); ignores others. */
  databaseError(source: string, error: unknown): void;
  /** A login (or password check) was refused because its attempt limit was reached. */
  loginBlocked(api: 'platform' | 'cluster'): void;
}

declare module 'fastify' {
  interface FastifyInstance {
    opsMetrics: OpsMetrics;
  }
  interface FastifyRequest {
    /** performance.now() when a timed request started; 0 when it is not timed. */
    metricsStartedAt: number;
  }
  interface FastifyContextConfig {
    /** Leaves the route out of the request metrics (the scrape endpoint itself). */
    disableMetrics?: boolean;
  }
}

/** Preflights and probes are not timed (as fastify-metrics did not). */
const UNTIMED_METHODS = new Set(['HEAD', 'OPTIONS', 'TRACE', 'CONNECT']);

/** Request latency buckets (seconds): fast reads to slow chat completions. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

function sameSecret(given: string, expected: string): boolean {
  const digest = (text: string) => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

function bearerOf(request: FastifyRequest): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
  return match?.[1];
}

/**
 * `GET /metrics` in the Prometheus text format (prom-client): request count
 * and latency by route pattern, method and status; process metrics; database errors and login
 * blocks; modules add gauges. One registry per app (several apps may share a process in tests).
 * With METRICS_TOKEN set, scrapes must send `Authorization: Bearer <token>`.
 */
export default fp(
  async function metricsPlugin(app: FastifyInstance) {
    const registry = new Registry();
    collectDefaultMetrics({ register: registry });
    const requestDuration = new LatencyHistogram('http_request_duration_seconds', 'request duration in seconds', LATENCY_BUCKETS);
    registry.registerMetric(requestDuration.asMetric());
    // Two hooks of our own instead of fastify-metrics' (a timer closure and a label object
    // merged from options on every request), and a histogram of our own instead of
    // prom-client's: what every route pays should be small.
    app.decorateRequest('metricsStartedAt', 0);
    app.addHook('onRequest', (request, _reply, done) => {
      const { method, config } = request.routeOptions;
      if (config.disableMetrics !== true && !(typeof method === 'string' && UNTIMED_METHODS.has(method))) request.metricsStartedAt = performance.now();
      done();
    });
    app.addHook('onResponse', (request, reply, done) => {
      if (request.metricsStartedAt > 0) {
        // Unmatched URLs are counted under one label, so a 404 flood shows without a label per URL.
        const route = request.routeOptions.url ?? '(unmatched)';
        requestDuration.observe(request.method, route, reply.statusCode, (performance.now() - request.metricsStartedAt) / 1000);
      }
      done();
    });

    const databaseErrors = new Counter({
      name: 'database_errors_total',
      help: 'Database calls that failed because the database was unavailable, by where they ran and error class',
      labelNames: ['source', 'error'],
      registers: [registry],
    });
    const loginBlocks = new Counter({
      name: 'login_blocks_total',
      help: 'Logins refused because the failed-attempt limit was reached, by API',
      labelNames: ['api'],
      registers: [registry],
    });

    app.decorate('opsMetrics', {
      registry,
      databaseError: (source: string, error: unknown) => {
        if (isDatabaseUnavailable(error)) databaseErrors.inc({ source, error: error instanceof Error ? error.name : 'unknown' });
      },
      loginBlocked: (api: 'platform' | 'cluster') => loginBlocks.inc({ api }),
    } satisfies OpsMetrics);

    const token = app.config.METRICS_TOKEN;
    app.get(
      '/metrics',
      // Not a documented API operation; scrapes are frequent, so they are not logged either.
      { schema: { hide: true }, logLevel: 'warn', config: { disableMetrics: true } },
      async (request, reply) => {
        if (token) {
          const given = bearerOf(request);
          if (!given || !sameSecret(given, token)) {
            throw Errors.unAuthorization('This endpoint needs Authorization: Bearer <METRICS_TOKEN>');
          }
        }
        const text = await registry.metrics();
        return reply.header('cache-control', 'no-store').type(registry.contentType).send(text);
      },
    );
  },
  { name: 'metrics' },
);
