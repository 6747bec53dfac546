import type { AnyBulkWriteOperation, Db } from 'mongodb';
import type { IndexDeclaration } from '../../infra/mongo.js';
import type { ResourceUsage } from './pod-usage.js';

const PODS = 'cluster_pods';

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

export const POD_INDEXES: readonly IndexDeclaration[] = [{ collection: PODS, key: { nodeName: 1, phase: 1 }, options: { name: 'node_phase' } }];

export function createPodsRepo(db: Db) {
  const pods = db.collection<StoredPod>(PODS);
  return {
    async hasAny(): Promise<boolean> {
      return (await pods.findOne({}, { projection: { _id: 1 } })) !== null;
    },

    /**
     * Summed requests and limits per node, terminated pods excluded unless asked for. Summed
     * here rather than in `$group`: FerretDB 1.24 computes only the first `$sum` of a group.
     */
    async usageByNode(nodeNames: string[], includeTerminated: boolean): Promise<Map<string, ResourceUsage>> {
      const match: Record<string, unknown> = { nodeName: { $in: nodeNames } };
      if (!includeTerminated) match.phase = { $nin: ['Succeeded', 'Failed'] };
      const rows = await pods
        .find(match, { projection: { _id: 0, nodeName: 1, cpuRequests: 1, cpuLimits: 1, memoryRequests: 1, memoryLimits: 1 } })
        .toArray();
      const totals = new Map<string, ResourceUsage>();
      for (const row of rows) {
        const total = totals.get(row.nodeName) ?? { cpuRequests: 0, cpuLimits: 0, memoryRequests: 0, memoryLimits: 0 };
        total.cpuRequests += row.cpuRequests;
        total.cpuLimits += row.cpuLimits;
        total.memoryRequests += row.memoryRequests;
        total.memoryLimits += row.memoryLimits;
        totals.set(row.nodeName, total);
      }
      return totals;
    },

    async upsertMany(docs: StoredPod[]): Promise<{ created: number; updated: number }> {
      if (docs.length === 0) return { created: 0, updated: 0 };
      const operations: AnyBulkWriteOperation<StoredPod>[] = docs.map((doc) => ({
        replaceOne: { filter: { _id: doc._id }, replacement: doc, upsert: true },
      }));
      const result = await pods.bulkWrite(operations, { ordered: true });
      return { created: result.upsertedCount, updated: result.matchedCount };
    },
  };
}

export type PodsRepo = ReturnType<typeof createPodsRepo>;
