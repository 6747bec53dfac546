import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

const PING_TIMEOUT_MS = 2000;

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
        request.log.warn({ err: error }, 'readiness check failed');
        return reply.code(503).send({ status: 'unavailable', message: 'database is not reachable' });
      } finally {
        clearTimeout(timer);
      }
    });
  },
  { name: 'health', dependencies: ['mongo'] },
);
