import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Errors } from '../../infra/errors.js';
import type { QueryValue } from './node-query.js';
import { nodeListQuerySchema, nodeListResponseSchema, nodeParamsSchema } from './nodes.schema.js';

/** The same routes under the neutral group and under KubeSphere's own name (existing clients). */
export const NODE_GROUPS = ['resources.platform.io', 'resources.kubesphere.io'] as const;

/** Every authenticated account may list and get nodes; anonymous callers get the reference 403. */
function requireCaller(request: FastifyRequest, group: string, verb: 'list' | 'get', name?: string): void {
  if (request.clusterIdentity) return;
  const subject = name === undefined ? `nodes.${group}` : `nodes.${group} "${name}"`;
  const message = `${subject} is forbidden: User "system:anonymous" cannot ${verb} resource "nodes" in API group "${group}" at the cluster scope`;
  throw Errors.k8s(403, 'Forbidden', message, name === undefined ? { group, kind: 'nodes' } : { name, group, kind: 'nodes' });
}

export default async function nodesRoutes(app: FastifyInstance): Promise<void> {
  for (const group of NODE_GROUPS) {
    const base = `/kapis/${group}/v1alpha3/nodes`;
    const docs = { tags: ['cluster nodes'], auth: ['clusterBearer'], enveloped: false };
    app.get(base, { config: { docs: { ...docs, summary: `List nodes (${group})`, input: nodeListQuerySchema, response: nodeListResponseSchema } } }, async (request) => {
      requireCaller(request, group, 'list');
      const query = nodeListQuerySchema.parse(request.query ?? {}) as Record<string, QueryValue>;
      return app.cluster.nodes.list(query);
    });
    app.get(`${base}/:name`, { config: { docs: { ...docs, summary: `Get one node (${group})` } } }, async (request) => {
      const { name } = nodeParamsSchema.parse(request.params);
      requireCaller(request, group, 'get', name);
      return app.cluster.nodes.get(name, { group });
    });
  }
}
