import { createHash } from 'node:crypto';
import { z } from 'zod';
import { computeNodeStatus, type NodeStatus } from '../../domain/node-status.js';
import { type ResourceUsage, usageAnnotations, ZERO_USAGE } from './pod-usage.js';
import { quantityProblem } from './quantity.js';
import { hasFourDigitYear } from '../../infra/zod.js';

/**
 * How a Kubernetes Node is stored. The object itself is kept as JSON text, because its labels,
 * annotations and managedFields have keys with dots that FerretDB refuses; what queries need is
 * copied into flat, indexable fields (`labelPairs: ["k=v"]`, `labelKeys: ["k"]`, a computed
 * `status`), so filters, sorting and paging run in the database.
 */
export interface StoredNode {
  _id: string;
  uid: string;
  creationTimestamp: Date;
  status: NodeStatus;
  labelPairs: string[];
  labelKeys: string[];
  annotationPairs: string[];
  annotationKeys: string[];
  alias: string;
  json: string;
  updatedAt: Date;
}

export type KubeNode = Record<string, unknown> & {
  metadata: Record<string, unknown> & { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
};

const stringMap = z.record(z.string(), z.string());
/** A ResourceList (capacity, requests, ...): every value a quantity within range, refused at import otherwise. */
export const quantityMap = z.record(
  z.string(),
  z.string().check((ctx) => {
    const problem = quantityProblem(ctx.value);
    if (problem) ctx.issues.push({ code: 'custom', message: problem, input: ctx.value });
  }),
);

export const nodeSchema = z.looseObject({
  kind: z.literal('Node').optional(),
  metadata: z.looseObject({
    name: z.string().regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'must be a lowercase DNS name').max(253),
    uid: z.string().min(1).max(128).optional(),
    resourceVersion: z.string().optional(),
    creationTimestamp: z.iso
      .datetime({ offset: true })
      .refine((text) => hasFourDigitYear(new Date(text)), 'must fall between the years 0000 and 9999 (UTC)')
      .optional(),
    labels: stringMap.optional(),
    annotations: stringMap.optional(),
  }),
  spec: z.looseObject({ unschedulable: z.boolean().optional() }).optional(),
  status: z
    .looseObject({
      capacity: quantityMap.optional(),
      allocatable: quantityMap.optional(),
      conditions: z.array(z.looseObject({ type: z.string(), status: z.string() })).optional(),
    })
    .optional(),
});

/** A stable UUID for nodes imported without one, so re-imports keep the same uid. */
export function uidForName(name: string): string {
  const hex = createHash('sha1').update(`node:${name}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** RFC 3339, UTC, second precision, as Kubernetes serialises times. */
export function kubeTime(date: Date): string {
  return `${date.toISOString().slice(0, 19)}Z`;
}

const pairs = (map: Record<string, string>) => Object.entries(map).map(([key, value]) => `${key}=${value}`);

/** Normalises a validated Node and derives the stored document. */
export function toStoredNode(input: z.output<typeof nodeSchema>, now: Date): StoredNode {
  const { kind: _kind, apiVersion: _apiVersion, ...node } = input as typeof input & { apiVersion?: unknown };
  const metadata = { ...node.metadata };
  const created = new Date(metadata.creationTimestamp ?? now);
  created.setUTCMilliseconds(0);
  metadata.creationTimestamp = kubeTime(created);
  metadata.uid ??= uidForName(metadata.name);
  metadata.resourceVersion ??= '1';
  const labels = metadata.labels ?? {};
  const annotations = metadata.annotations ?? {};
  return {
    _id: metadata.name,
    uid: metadata.uid,
    creationTimestamp: created,
    status: computeNodeStatus(node),
    labelPairs: pairs(labels),
    labelKeys: Object.keys(labels),
    annotationPairs: pairs(annotations),
    annotationKeys: Object.keys(annotations),
    alias: annotations['kubesphere.io/alias-name'] ?? '',
    json: JSON.stringify({ ...node, metadata }),
    updatedAt: now,
  };
}

/** The API form: the stored object with the selfLink default. */
export function toApiNode(json: string): KubeNode {
  const node = JSON.parse(json) as KubeNode;
  const metadata = node.metadata;
  metadata.selfLink ??= `/api/v1/nodes/${metadata.name}`;
  // Key order as Kubernetes prints it: name, selfLink, uid, resourceVersion, creationTimestamp, ...
  const { name, selfLink, uid, resourceVersion, creationTimestamp, ...rest } = metadata;
  node.metadata = { name, selfLink, uid, resourceVersion, creationTimestamp, ...rest };
  return node;
}

/**
 * The API form with the eight usage annotations of the node's pods; none at all when no pod is
 * stored in the cluster (reference quirk).
 */
export function renderNode(json: string, usage: ResourceUsage | undefined, withPods: boolean): KubeNode {
  const node = toApiNode(json) as KubeNode & { status?: { allocatable?: Record<string, string> } };
  if (withPods) {
    node.metadata.annotations = { ...(node.metadata.annotations ?? {}), ...usageAnnotations(usage ?? ZERO_USAGE, node.status?.allocatable) };
  }
  return node;
}

/** Parses a `labelPairs` entry back into key and value (keys never contain '='). */
export function splitPair(pair: string): [string, string] {
  const index = pair.indexOf('=');
  return [pair.slice(0, index), pair.slice(index + 1)];
}
