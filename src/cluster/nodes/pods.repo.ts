import type { AnyBulkWriteOperation, Db } from 'mongodb';
import { withFollowUp } from '../../infra/follow-up.js';
import { bulkUpdate, type IndexDeclaration, upsertMany } from '../../infra/mongo.js';
import { type ResourceUsage, ZERO_USAGE } from './pod-usage.js';

const PODS = 'cluster_pods';
const USAGE = 'cluster_node_usage';

/** Only what the node annotations need: where the pod runs, its phase and its summed resources. */
export interface StoredPod extends ResourceUsage {
  /** `namespace/name`, unique in a cluster. */
  _id: string;
  namespace: string;
  name: string;
  uid: string;
  nodeName: string;
  phase: string;
  updatedAt: Date;
}

/** Per-node sums, recomputed when pods are imported, so a node list reads one document per node. */
export interface NodeUsage {
  _id: string;
  /** Pods that are neither Succeeded nor Failed (the list endpoint). */
  active: ResourceUsage;
  /** Every pod (the single-node GET, a reference quirk). */
  all: ResourceUsage;
}

export const POD_INDEXES: readonly IndexDeclaration[] = [{ collection: PODS, key: { nodeName: 1, phase: 1 }, options: { name: 'node_phase' } }];

const TERMINATED = new Set(['Succeeded', 'Failed']);

/**
 * A stored amount as a finite number: imports refuse quantities beyond int64 milli-units, but pods
 * stored before they did may hold 1e308 or Infinity, and a sum of those must still be a number
 * the database accepts (FerretDB refuses Infinity) and a page can print. NaN counts as nothing.
 */
function finite(value: unknown): number {
  if (typeof value !== 'number' || Number.isNaN(value)) return 0;
  return Math.max(-Number.MAX_VALUE, Math.min(Number.MAX_VALUE, value));
}

function add(total: ResourceUsage, pod: ResourceUsage): void {
  total.cpuRequests = finite(total.cpuRequests + finite(pod.cpuRequests));
  total.cpuLimits = finite(total.cpuLimits + finite(pod.cpuLimits));
  total.memoryRequests = finite(total.memoryRequests + finite(pod.memoryRequests));
  total.memoryLimits = finite(total.memoryLimits + finite(pod.memoryLimits));
}

export function createPodsRepo(db: Db) {
  const pods = db.collection<StoredPod>(PODS);
  const usage = db.collection<NodeUsage>(USAGE);

  /**
   * Sums every pod per node (in code: FerretDB 1.24 computes only the first `$sum` of a
   * `$group`) and rewrites the summaries; nodes left without pods lose theirs.
   */
  async function recomputeUsage(): Promise<void> {
    const rows = await pods.find({ nodeName: { $ne: '' } }, { projection: { _id: 0, nodeName: 1, phase: 1, cpuRequests: 1, cpuLimits: 1, memoryRequests: 1, memoryLimits: 1 } }).toArray();
    const totals = new Map<string, NodeUsage>();
    for (const row of rows) {
      const entry = totals.get(row.nodeName) ?? { _id: row.nodeName, active: { ...ZERO_USAGE }, all: { ...ZERO_USAGE } };
      add(entry.all, row);
      if (!TERMINATED.has(row.phase)) add(entry.active, row);
      totals.set(row.nodeName, entry);
    }
    const operations: AnyBulkWriteOperation<NodeUsage>[] = [...totals.values()].map((entry) => ({
      replaceOne: { filter: { _id: entry._id }, replacement: entry, upsert: true },
    }));
    await bulkUpdate(usage, operations, { ordered: false });
    await usage.deleteMany({ _id: { $nin: [...totals.keys()] } });
  }

  return {
    async hasAny(): Promise<boolean> {
      return (await pods.findOne({}, { projection: { _id: 1 } })) !== null;
    },
    /** Whether any pod is not terminated (the reference annotates a node list only then). */
    async hasActive(): Promise<boolean> {
      return (await pods.findOne({ phase: { $nin: [...TERMINATED] } }, { projection: { _id: 1 } })) !== null;
    },

    /** Every node's summed usage, for the in-process node index (one read of the collection). */
    loadUsage: () => usage.find({}).toArray(),

    /** The summed usage of these nodes (one read). */
    async usageFor(nodeNames: string[], includeTerminated: boolean): Promise<Map<string, ResourceUsage>> {
      const found = await usage.find({ _id: { $in: nodeNames } }).toArray();
      return new Map(found.map((entry) => [entry._id, includeTerminated ? entry.all : entry.active]));
    },

    /**
     * Inserts the new pods and replaces the known ones (in chunks; `onWritten` hears the running
     * total); with `prune`, then deletes every stored pod not among them. Then recomputes every
     * node's usage: after a failure too, since the chunks written before it are stored pods (the
     * import's error is the one thrown).
     */
    async upsertMany(docs: StoredPod[], onWritten?: (written: number) => void, options: { prune?: boolean } = {}): Promise<{ created: number; updated: number; deleted?: number }> {
      if (docs.length === 0 && !options.prune) return { created: 0, updated: 0 };
      return withFollowUp(async () => {
        const counts = await upsertMany(pods, docs, onWritten);
        if (!options.prune) return counts;
        const { deletedCount } = await pods.deleteMany({ _id: { $nin: docs.map((doc) => doc._id) } });
        return { ...counts, deleted: deletedCount };
      }, recomputeUsage);
    },
  };
}

export type PodsRepo = ReturnType<typeof createPodsRepo>;
