import type { FastifyInstance } from 'fastify';
import apps from './apps/index.js';
import chat from './chat/index.js';
import datasets from './datasets/index.js';
import identity from './identity/index.js';

/** The application platform API, mounted at /api. Identity comes first: it provides auth. */
export default async function platformApi(app: FastifyInstance): Promise<void> {
  await app.register(identity);
  await app.register(apps);
  await app.register(datasets);
  await app.register(chat);
}
