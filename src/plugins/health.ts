import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { describeError } from '../infra/database-errors.js';
import { DATABASE_RETRY_AFTER_SECONDS } from '../infra/errors.js';

/** Below the 2 s a load balancer's probe usually allows; the client itself fails within 1 s. */
const PING_TIMEOUT_MS = 1500;

/** Liveness (`/healthz`) and readiness (`/readyz`, pings MongoDB). Both public. */
export default fp(
  async function healthPlugin(app: FastifyInstance) {
    app.get('/healthz', { schema: { summary: 'Process is alive', tags: ['system'] } }, async () => ({
      status: 'ok',
    }));

    app.get('/readyz', { schema: { summary: 'Database is reachable', tags: ['system'] } }, async (request, reply) => {
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          app.mongo.db.command({ ping: 1 }),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error(`no answer within ${PING_TIMEOUT_MS} ms`)), PING_TIMEOUT_MS);
          }),
        ]);
        return { status: 'ok' };
      } catch (error) {
        app.opsMetrics.databaseError('readiness', error);
        request.log.warn({ dbError: describeError(error) }, 'readiness check failed');
        return reply
          .code(503)
          .header('retry-after', String(DATABASE_RETRY_AFTER_SECONDS))
          .send({ status: 'unavailable', message: 'database is not reachable' });
      } finally {
        clearTimeout(timer);
      }
    });
  },
  { name: 'health', dependencies: ['mongo'] },
);
