import type { FastifyInstance } from 'fastify';

/** The apps module of the platform API (routes registered here). */
export default async function appsModule(_app: FastifyInstance): Promise<void> {}
