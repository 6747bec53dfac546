import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { z } from 'zod';

/** What a route tells the OpenAPI document about itself (via `config.docs`). */
export interface RouteDocs {
  summary?: string;
  tags?: string[];
  /** Request parameters: query for GET/DELETE, JSON body otherwise. */
  input?: z.ZodType;
  /** Content types accepted for the body when not JSON (e.g. form-urlencoded, multipart). */
  bodyContentType?: string;
  auth?: readonly string[];
  /** Body shape of a non-enveloped or hot route's success reply. */
  response?: z.ZodType;
  /** Whether the success reply is wrapped in the platform envelope. */
  enveloped?: boolean;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    docs?: RouteDocs;
  }
  interface FastifyInstance {
    openapiDocument(): Record<string, unknown>;
  }
}

interface CollectedRoute {
  method: string;
  url: string;
  docs: RouteDocs;
}

const SECURITY_SCHEMES: Record<string, Record<string, unknown>> = {
  session: { type: 'apiKey', in: 'header', name: 'token', description: 'Session JWT (also cookie fastgpt_token)' },
  apiKey: { type: 'http', scheme: 'bearer', description: 'API key fastgpt-…' },
  rootKey: { type: 'apiKey', in: 'header', name: 'rootkey' },
  outLink: { type: 'apiKey', in: 'query', name: 'shareId', description: 'Share link id with outLinkUid' },
  teamSpace: { type: 'apiKey', in: 'query', name: 'teamToken', description: 'Team space token with teamId' },
  clusterBearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
};

function toSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'openapi-3.0' }) as Record<string, unknown>;
  delete json.$schema;
  return json;
}

function openapiPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}').replace(/\*$/, '{path}');
}

function queryParameters(schema: Record<string, unknown>) {
  const properties = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
  const required = new Set((schema.required as string[] | undefined) ?? []);
  return Object.entries(properties).map(([name, property]) => ({ name, in: 'query', required: required.has(name), schema: property }));
}

const envelope = (data: Record<string, unknown>) => ({
  type: 'object',
  properties: { code: { type: 'integer', example: 200 }, statusText: { type: 'string' }, message: { type: 'string' }, data },
});

export function buildDocument(routes: CollectedRoute[]): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const sorted = [...routes].sort((a, b) => a.url.localeCompare(b.url) || a.method.localeCompare(b.method));
  for (const route of sorted) {
    const path = openapiPath(route.url);
    const method = route.method.toLowerCase();
    const { docs } = route;
    const operation: Record<string, unknown> = {
      summary: docs.summary ?? `${route.method} ${path}`,
      tags: docs.tags ?? [],
    };
    const pathParams = [...path.matchAll(/\{([^}]+)\}/g)].map((match) => ({ name: match[1], in: 'path', required: true, schema: { type: 'string' } }));
    const input = docs.input ? toSchema(docs.input, 'input') : undefined;
    const inQuery = method === 'get' || method === 'delete' || method === 'head';
    operation.parameters = [...pathParams, ...(input && inQuery ? queryParameters(input) : [])];
    if (input && !inQuery) {
      operation.requestBody = { required: true, content: { [docs.bodyContentType ?? 'application/json']: { schema: input } } };
    }
    if (docs.auth && docs.auth.length > 0) operation.security = docs.auth.map((kind) => ({ [kind]: [] }));
    const success = docs.response ? toSchema(docs.response, 'output') : {};
    operation.responses = {
      '200': {
        description: 'Success',
        content: { 'application/json': { schema: docs.enveloped === false ? success : envelope(success) } },
      },
      default: { description: 'Error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
    };
    paths[path] ??= {};
    paths[path][method] = operation;
  }
  return {
    openapi: '3.0.3',
    info: {
      title: 'Application platform and cluster API',
      version: '1.0.0',
      description: 'FastGPT-compatible platform API under /api and KubeSphere-compatible cluster API at the root.',
    },
    servers: [{ url: 'http://localhost:3000' }],
    paths,
    components: {
      securitySchemes: SECURITY_SCHEMES,
      schemas: {
        Error: {
          description: 'Platform envelope under /api, OAuth error on /oauth, Kubernetes Status on /kapis',
          oneOf: [
            envelope({ nullable: true }),
            { type: 'object', properties: { error: { type: 'string' }, error_description: { type: 'string' } } },
            {
              type: 'object',
              properties: { kind: { type: 'string' }, status: { type: 'string' }, message: { type: 'string' }, reason: { type: 'string' }, code: { type: 'integer' } },
            },
          ],
        },
      },
    },
  };
}

/** Collects every route that carries `config.docs` and serves the document at /openapi.json. */
export default fp(
  async function openapiPlugin(app: FastifyInstance) {
    const routes: CollectedRoute[] = [];
    app.addHook('onRoute', (route) => {
      const docs = route.config?.docs;
      if (!docs) return;
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      for (const method of methods) {
        if (method === 'HEAD' || method === 'OPTIONS') continue;
        routes.push({ method, url: route.url, docs });
      }
    });
    let cached: Record<string, unknown> | undefined;
    app.decorate('openapiDocument', () => {
      cached ??= buildDocument(routes);
      return cached;
    });
    app.get('/openapi.json', { config: { docs: { summary: 'This OpenAPI document', tags: ['system'], enveloped: false } } }, async () =>
      app.openapiDocument(),
    );
  },
  { name: 'openapi' },
);
