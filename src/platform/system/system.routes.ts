import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { Errors } from '../../infra/errors.js';
import { definePlatformRoute } from '../define-route.js';
import { publicCatalog } from './model-registry.js';

/** The version in package.json, found from src/ and from the built dist/ alike (both sit one level below it). */
function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version?: string };
    return pkg.version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

const tags = ['system'];

/** getInitData (public) and the fnApi catch-all. */
export async function systemRoutes(app: FastifyInstance): Promise<void> {
  const systemVersion = packageVersion();

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/common/system/getInitData',
    auth: [],
    summary: 'Front-end configuration, the configured models (secrets blanked) and the system version',
    tags,
    handler: async () => ({
      feConfigs: { ...app.models.catalog.feConfigs, isPlus: false },
      ...publicCatalog(app.models.catalog),
      systemVersion,
    }),
  });

  // FastGPT 4.8 has no fnApi route (its catch-alls are proApi and lafApi): every path here is unknown.
  definePlatformRoute(app, {
    methods: ['GET', 'POST', 'PUT', 'DELETE'],
    url: '/fnApi/*',
    auth: [],
    summary: 'Function API catch-all: no function is defined, every path answers 404',
    tags,
    handler: async ({ request }) => {
      const path = (request.params as { '*'?: string })['*'] ?? '';
      throw Errors.notFound(`Unknown function path '${path}': this server defines no fnApi functions`);
    },
  });
}
