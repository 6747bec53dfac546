import type { FastifyInstance } from 'fastify';

/** The datasets module of the platform API (routes registered here). */
export default async function datasetsModule(_app: FastifyInstance): Promise<void> {}
