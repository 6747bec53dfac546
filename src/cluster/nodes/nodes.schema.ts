import { z } from 'zod';

const queryValue = z.union([z.string(), z.array(z.string())]);

/** Any key is allowed (unknown ones are ignored); the documented ones are listed for the docs. */
export const nodeListQuerySchema = z.looseObject({
  page: queryValue.optional().describe('1-based page; a non-integer means 1'),
  limit: queryValue.optional().describe('page size; absent or non-integer returns every item'),
  sortBy: queryValue.optional().describe('name, or anything else for creation time'),
  ascending: queryValue.optional().describe('true for ascending; default newest first'),
  labelSelector: queryValue.optional().describe('Kubernetes label selector; an invalid one is ignored'),
  name: queryValue.optional().describe('substring of the node name'),
  names: queryValue.optional().describe('comma-separated exact names'),
  uid: queryValue.optional(),
  status: queryValue.optional().describe('running, warning or unschedulable'),
  label: queryValue.optional().describe('label selector on labels'),
  annotation: queryValue.optional().describe('label selector syntax on annotations'),
  alias: queryValue.optional().describe('substring of the kubesphere.io/alias-name annotation'),
});

export const nodeParamsSchema = z.object({ name: z.string().min(1) });

/**
 * One listed node: the stored Kubernetes object. Only the metadata fields every node has are
 * declared, in the order the service puts them first; everything else (labels, annotations,
 * spec, status, fields of newer Kubernetes versions) is written as stored.
 */
export const listedNode = z.looseObject({
  metadata: z.looseObject({
    name: z.string(),
    selfLink: z.string().optional(),
    uid: z.string().optional(),
    resourceVersion: z.string().optional(),
    creationTimestamp: z.string().optional(),
  }),
});

export const nodeListResponseSchema = z.object({ items: z.array(listedNode), totalItems: z.number().int() });
