import type { FastifyInstance } from 'fastify';

/** The cluster API (OAuth token endpoint and node listing), mounted at the root. */
export default async function clusterApi(_app: FastifyInstance): Promise<void> {}
