import type { FastifyInstance } from 'fastify';
import { nestsDeeperThan } from '../../infra/input-guard.js';
import { Errors } from '../../infra/errors.js';
import { type SafeFetchOptions, safeFetch } from '../../infra/outbound-fetch.js';
import { definePlatformRoute } from '../define-route.js';
import { httpPluginCreateInput, httpPluginUpdateInput, schemaUrlInput } from './apps.schema.js';
import type { AppsCore, AppsDeps } from './apps.service.js';
import { createHttpPluginService } from './http-plugin.service.js';
import { parseApiSchema } from './openapi-plugins.js';

const tags = ['http plugins'];
/** How deep a fetched OpenAPI document may nest (real documents stay far below; JSON writers recurse). */
const MAX_SCHEMA_DEPTH = 256;

export function registerHttpPluginRoutes(app: FastifyInstance, core: AppsCore, deps: AppsDeps, fetchOptions: SafeFetchOptions): void {
  const session = ['session'] as const;
  const plugins = createHttpPluginService(core, deps);

  definePlatformRoute(app, {
    methods: ['POST'],
    url: '/core/app/httpPlugin/create',
    auth: session,
    input: httpPluginCreateInput,
    summary: 'Create an HTTP plugin and one child plugin per operation of its OpenAPI schema',
    tags,
    handler: async ({ input, auth }) => {
      await plugins.create(auth, input);
      return {};
    },
  });

  definePlatformRoute(app, {
    methods: ['POST', 'PUT'],
    url: '/core/app/httpPlugin/update',
    auth: session,
    input: httpPluginUpdateInput,
    summary: 'Update an HTTP plugin; children are reconciled with the new schema',
    tags,
    handler: async ({ input, auth }) => {
      await plugins.update(auth, input);
      return null;
    },
  });

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/app/httpPlugin/getApiSchemaByUrl',
    auth: session,
    input: schemaUrlInput,
    summary: 'Fetch an OpenAPI document by URL (SSRF-guarded, timeout and size cap)',
    tags,
    handler: async ({ input }) => {
      const response = await safeFetch(input.url, { ...fetchOptions, headers: { accept: 'application/json, application/yaml, text/yaml, */*' } });
      if (response.status >= 400) throw Errors.badGateway(`Fetching the schema failed with HTTP ${response.status}`);
      // The client gets YAML's numbers and booleans back as such.
      const doc = parseApiSchema(response.text(), 'core');
      // The document goes back as JSON: one nested past what a serialiser walks is refused, not a 500.
      if (nestsDeeperThan(doc, MAX_SCHEMA_DEPTH)) throw Errors.missingParams(`Invalid field 'url': the document nests deeper than ${MAX_SCHEMA_DEPTH} levels`);
      return doc;
    },
  });
}
