import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { sendMemoised } from '../../infra/answer-memo.js';
import { ClusterErrors } from '../../infra/errors.js';
import type { QueryValue } from './node-query.js';
import { nodeListQuerySchema, nodeListResponseSchema, nodeParamsSchema } from './nodes.schema.js';

/** The same routes under the neutral group and under KubeSphere's own name (existing clients). */
export const NODE_GROUPS = ['resources.platform.io', 'resources.kubesphere.io'] as const;

/**
 * Every authenticated account may list and get nodes; anonymous callers get the reference 403.
 * Returned rather than thrown, for a synchronous hook's `done` (no promise per request).
 */
function requireCaller(request: FastifyRequest, group: string, verb: 'list' | 'get', name?: string): Error | undefined {
  return request.clusterIdentity ? undefined : ClusterErrors.nodesForbidden(group, verb, name);
}

/** The query string of a request URL as sent ('' without one). */
function rawQueryOf(url: string): string {
  const start = url.indexOf('?');
  return start < 0 ? '' : url.slice(start + 1);
}

export default async function nodesRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  for (const group of NODE_GROUPS) {
    const base = `/kapis/${group}/v1alpha3/nodes`;
    const docs = { tags: ['cluster nodes'], security: [{ clusterBearer: [] }] };
    // The caller check runs before validation: an anonymous caller gets the 403, whatever the input.
    routes.get(
      base,
      {
        schema: { ...docs, summary: `List nodes (${group})`, querystring: nodeListQuerySchema, response: { 200: nodeListResponseSchema } },
        preValidation: (request, _reply, done) => done(requireCaller(request, group, 'list')),
      },
      async (request, reply) => sendMemoised(reply, await app.cluster.nodes.list(request.query as Record<string, QueryValue>, rawQueryOf(request.url))),
    );
    routes.get(
      `${base}/:name`,
      {
        schema: { ...docs, summary: `Get one node (${group})`, params: nodeParamsSchema },
        preValidation: (request, _reply, done) => done(requireCaller(request, group, 'get', (request.params as { name: string }).name)),
      },
      async (request) => app.cluster.nodes.get(request.params.name, { group }),
    );
    // go-restful answers another method on a known path 405, which clients do not read as "no such API".
    for (const url of [base, `${base}/:name`]) {
      app.route({
        method: ['POST', 'PUT', 'PATCH', 'DELETE'],
        url,
        handler: async () => {
          throw ClusterErrors.nodesMethodNotAllowed();
        },
      });
    }
  }
}
