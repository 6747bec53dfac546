import type { FastifyInstance } from 'fastify';

/** The identity module of the platform API (routes registered here). */
export default async function identityModule(_app: FastifyInstance): Promise<void> {}
