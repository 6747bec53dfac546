import { describe, expect, it } from 'vitest';
import { nodeSchema, toStoredNode } from '../../src/cluster/nodes/node-document.js';
import { NodeSnapshot } from '../../src/cluster/nodes/node-index.js';
import { type NodeListPlan, planNodeList, type QueryValue } from '../../src/cluster/nodes/node-query.js';
import { nodeListResponseSchema } from '../../src/cluster/nodes/nodes.schema.js';
import type { NodeIndexEntry } from '../../src/cluster/nodes/nodes.repo.js';
import type { NodeUsage } from '../../src/cluster/nodes/pods.repo.js';
import { NODES_PER_SLICE } from '../../src/cluster/nodes/sliced-list.js';
import { compileResponseSerializer } from '../../src/infra/response-serializer.js';

/**
 * Node lists of more than one slice of nodes (report-loop-audit #7): built a slice at a time with
 * yields, and byte for byte what the route wrote before (the page rendered, then the route's
 * compiled serializer).
 */
const NOW = new Date('2024-03-01T00:00:00Z');
const name = (index: number) => `node-${String(index).padStart(5, '0')}`;

function entry(index: number, filler = 50): NodeIndexEntry {
  const metadata = {
    name: name(index),
    // Shuffled creation times (some equal): the name breaks ties.
    creationTimestamp: new Date(Date.UTC(2024, 0, 1) + ((index * 7919) % 1000) * 60_000).toISOString(),
    labels: { zone: `z${index % 3}`, rank: String(index % 17), ...(index % 5 === 0 ? { gpu: '' } : {}) },
    annotations: { note: `é"\\\u2028${'n'.repeat(filler)}`, ...(index % 4 === 0 ? { 'kubesphere.io/alias-name': `alias-${index}` } : {}) },
  };
  const status = { allocatable: { cpu: '8', memory: '32Gi', pods: '110' }, conditions: [{ type: 'Ready', status: index % 9 === 0 ? 'False' : 'True' }] };
  // Some objects list spec and status before metadata: the serializer writes metadata first.
  const node = index % 2 === 0 ? { metadata, spec: { unschedulable: index % 11 === 0 }, status } : { spec: {}, status, metadata, extra: [1, null, 'x'] };
  const { updatedAt: _updatedAt, ...stored } = toStoredNode(nodeSchema.parse(node), NOW) as ReturnType<typeof toStoredNode> & { updatedAt?: unknown };
  return stored as NodeIndexEntry;
}

function queryOf(raw: string): Record<string, QueryValue> {
  const query: Record<string, QueryValue> = {};
  for (const [key, value] of new URLSearchParams(raw)) query[key] = value;
  return query;
}

function usageOf(entries: NodeIndexEntry[]): Map<string, NodeUsage> {
  const usage = new Map<string, NodeUsage>();
  entries.forEach((stored, index) => {
    if (index % 3 === 0) return;
    const active = { cpuRequests: index, cpuLimits: 2 * index, memoryRequests: index * 1024, memoryLimits: index * 4096 };
    usage.set(stored._id, { _id: stored._id, active, all: active });
  });
  return usage;
}

/** The route's serializer, as Fastify called it on the rendered page before large answers were sliced. */
const serialiseList = compileResponseSerializer(nodeListResponseSchema);
function previousBytes(snapshot: NodeSnapshot, plan: NodeListPlan): Buffer {
  return Buffer.from(serialiseList(plan.matchesNothing ? { items: [], totalItems: 0 } : snapshot.page(plan)));
}

/** The bytes the route sends: the memoised ones, else the computed answer through the serializer. */
async function sent(snapshot: NodeSnapshot, raw: string): Promise<Buffer> {
  const answer = await snapshot.listAnswer(raw, () => planNodeList(queryOf(raw)));
  return answer.memo.get(answer.key) ?? Buffer.from(serialiseList(await answer.compute()));
}

describe('large node lists', () => {
  const entries = Array.from({ length: 1200 }, (_, index) => entry(index));
  const queries = [
    '',
    'sortBy=name',
    'sortBy=name&ascending=true',
    'ascending=true',
    'labelSelector=zone%3Dz1',
    'labelSelector=zone!%3Dz0&sortBy=name',
    'labelSelector=rank>3,gpu',
    'label=rank<9&status=running',
    'alias=alias-1',
    'name=node-00&limit=500&page=2',
    'limit=300&page=2&labelSelector=zone!%3Dz2',
    'limit=250',
    `limit=${NODES_PER_SLICE + 1}&page=6`,
    'limit=10&page=3&sortBy=name',
    'labelSelector=zone%3Dnowhere',
    'ownerKind=Deployment',
    'limit=0',
  ];

  for (const [withActivePods, usage] of [
    [false, new Map<string, NodeUsage>()],
    [true, usageOf(entries)],
  ] as const) {
    it(`answers every query with the bytes of the previous rendering (${withActivePods ? 'with' : 'without'} pod usage)`, async () => {
      const snapshot = new NodeSnapshot(entries, usage, withActivePods, withActivePods);
      for (const raw of queries) {
        const reference = new NodeSnapshot(entries, usage, withActivePods, withActivePods);
        const expected = previousBytes(reference, planNodeList(queryOf(raw)));
        const first = await sent(snapshot, raw);
        expect({ raw, same: first.equals(expected) }).toEqual({ raw, same: true });
        // Again: from the memo (or per-node strings kept), still the same bytes.
        expect({ raw, same: (await sent(snapshot, raw)).equals(expected) }).toEqual({ raw, same: true });
      }
      // A page rendered on the small path first, then a large answer reusing its rendered nodes.
      const mixed = new NodeSnapshot(entries, usage, withActivePods, withActivePods);
      await sent(mixed, 'limit=50&sortBy=name');
      const expected = previousBytes(new NodeSnapshot(entries, usage, withActivePods, withActivePods), planNodeList({ sortBy: 'name' }));
      expect((await sent(mixed, 'sortBy=name')).equals(expected)).toBe(true);
    });
  }

  it('builds a 10,000-node answer in slices, handing the event loop back between them', async () => {
    const many = Array.from({ length: 10_000 }, (_, index) => entry(index, 10));
    const snapshot = new NodeSnapshot(many, new Map(), false, false);
    let pings = 0;
    let pinging = true;
    const ping = () => {
      pings++;
      if (pinging) setImmediate(ping);
    };
    setImmediate(ping);
    const answer = await snapshot.listAnswer('labelSelector=zone!%3Dfresh', () => planNodeList({ labelSelector: 'zone!=fresh' }));
    pinging = false;
    // 10 filter slices and 50 render slices: the loop ran between them.
    expect(pings).toBeGreaterThanOrEqual(10_000 / NODES_PER_SLICE);
    // The bytes are ready before the route sends them: nothing is rendered synchronously there.
    const bytes = answer.memo.get(answer.key);
    expect(bytes?.equals(previousBytes(new NodeSnapshot(many, new Map(), false, false), planNodeList({ labelSelector: 'zone!=fresh' })))).toBe(true);
    // Concurrent requests for one fresh answer share its building.
    const fresh = 'labelSelector=zone!%3Dshared';
    const plan = () => planNodeList({ labelSelector: 'zone!=shared' });
    const [left, right] = await Promise.all([snapshot.listAnswer(fresh, plan), snapshot.listAnswer(fresh, plan)]);
    expect(left.memo.get(left.key)).toBe(right.memo.get(right.key));
  });

  it('an answer over the memo bound is sent from a memo of its own, the snapshot memo left as it was', async () => {
    // 202 nodes of ~335 KB: ~68 MB, over the 64 MiB the snapshot keeps.
    const heavy = Array.from({ length: NODES_PER_SLICE + 2 }, (_, index) => entry(index, 335_000));
    const snapshot = new NodeSnapshot(heavy, new Map(), false, false);
    const small = await sent(snapshot, 'limit=1');
    const answer = await snapshot.listAnswer('', () => planNodeList({}));
    const bytes = answer.memo.get(answer.key);
    expect((bytes?.length ?? 0) > 64 * 1024 * 1024).toBe(true);
    expect(bytes?.subarray(-20).toString()).toMatch(/\],"totalItems":202\}$/);
    // Booleans, not the buffers: a failure must not print 64 MiB.
    expect(snapshot.pageAnswer('', () => planNodeList({})).memo.get(answer.key) === undefined).toBe(true);
    expect(snapshot.pageAnswer('limit=1', () => planNodeList({ limit: '1' })).memo.get(answer.key) === undefined).toBe(true);
    expect((await sent(snapshot, 'limit=1')).equals(small)).toBe(true);
  });

  it('a small page returns its answer at once, with nothing built ahead', () => {
    const snapshot = new NodeSnapshot(entries, new Map(), false, false);
    const answer = snapshot.listAnswer('limit=10', () => planNodeList({ limit: '10' }));
    expect(answer).not.toBeInstanceOf(Promise);
    if (answer instanceof Promise) return;
    expect(answer.memo.get(answer.key)).toBeUndefined();
  });
});
