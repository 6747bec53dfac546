import { z } from 'zod';
import { nodeSchema, quantityMap, type StoredNode, toStoredNode } from './node-document.js';
import { podResourceUsage } from './pod-usage.js';
import type { StoredPod } from './pods.repo.js';

/**
 * Validates the JSON printed by `kubectl get nodes -o json` / `kubectl get pods -A -o json`
 * (a List, or a single object) completely before anything is written, so a broken file
 * changes nothing. Every problem is reported with its item index and field.
 */
export class ImportError extends Error {}

const listSchema = z.looseObject({ kind: z.string().optional(), items: z.array(z.unknown()) });

/** What the usage sums read: every quantity checked here, so a refused one names its field. */
const containers = z.array(z.looseObject({ resources: z.looseObject({ requests: quantityMap.optional(), limits: quantityMap.optional() }).optional() })).optional();

const podSchema = z.looseObject({
  kind: z.literal('Pod').optional(),
  metadata: z.looseObject({
    name: z.string().min(1).max(253),
    namespace: z.string().min(1).max(63).optional(),
    uid: z.string().optional(),
  }),
  spec: z.looseObject({ nodeName: z.string().optional(), containers, initContainers: containers, overhead: quantityMap.optional() }).optional(),
  status: z.looseObject({ phase: z.string().optional() }).optional(),
});

function itemsOf(text: string, kind: 'Node' | 'Pod'): unknown[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new ImportError(`the file is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof parsed === 'object' && parsed !== null && (parsed as { kind?: unknown }).kind === kind) return [parsed];
  const list = listSchema.safeParse(parsed);
  if (!list.success) throw new ImportError(`expected a ${kind} or a List with 'items' (the output of kubectl get ${kind.toLowerCase()}s -o json)`);
  return list.data.items;
}

function describeIssues(index: number, error: z.ZodError): string[] {
  return error.issues.slice(0, 3).map((issue) => `items[${index}].${issue.path.join('.') || '(item)'}: ${issue.message}`);
}

function fail(problems: string[]): never {
  const shown = problems.slice(0, 10);
  const more = problems.length > shown.length ? `\n  … and ${problems.length - shown.length} more` : '';
  throw new ImportError(`the file was not imported, nothing changed:\n  ${shown.join('\n  ')}${more}`);
}

export function parseNodeFile(text: string, now: Date): StoredNode[] {
  const problems: string[] = [];
  const docs: StoredNode[] = [];
  const seen = new Map<string, number>();
  // The uid index is unique: a uid given twice would fail the write half-way through the file.
  const uids = new Map<string, { index: number; name: string }>();
  for (const [index, item] of itemsOf(text, 'Node').entries()) {
    const parsed = nodeSchema.safeParse(item);
    if (!parsed.success) {
      problems.push(...describeIssues(index, parsed.error));
      continue;
    }
    const doc = toStoredNode(parsed.data, now);
    const earlier = seen.get(doc._id);
    if (earlier !== undefined) problems.push(`items[${index}].metadata.name: node "${doc._id}" also appears at items[${earlier}]`);
    seen.set(doc._id, index);
    const owner = uids.get(doc.uid);
    if (owner === undefined) uids.set(doc.uid, { index, name: doc._id });
    else if (owner.name !== doc._id) problems.push(`items[${index}].metadata.uid: uid ${doc.uid} of node "${doc._id}" also belongs to node "${owner.name}" at items[${owner.index}]`);
    docs.push(doc);
  }
  if (problems.length > 0) fail(problems);
  return docs;
}

export function parsePodFile(text: string, now: Date): StoredPod[] {
  const problems: string[] = [];
  const docs = new Map<string, StoredPod>();
  for (const [index, item] of itemsOf(text, 'Pod').entries()) {
    const parsed = podSchema.safeParse(item);
    if (!parsed.success) {
      problems.push(...describeIssues(index, parsed.error));
      continue;
    }
    const pod = parsed.data;
    const usage = podResourceUsage(pod);
    const namespace = pod.metadata.namespace ?? 'default';
    const id = `${namespace}/${pod.metadata.name}`;
    docs.set(id, {
      _id: id,
      namespace,
      name: pod.metadata.name,
      uid: pod.metadata.uid ?? '',
      nodeName: pod.spec?.nodeName ?? '',
      phase: pod.status?.phase ?? 'Pending',
      ...usage,
      updatedAt: now,
    });
  }
  if (problems.length > 0) fail(problems);
  return [...docs.values()];
}
