/**
 * The node status used by the nodes `status` filter (KubeSphere 3.4): `unschedulable` when the
 * spec says so, otherwise `warning` when any known condition has an unexpected status,
 * otherwise `running`. Unknown condition types are ignored.
 */
export type NodeStatus = 'running' | 'warning' | 'unschedulable';

/** Condition types whose healthy status is "False" / "True". */
const HEALTHY_WHEN_FALSE = new Set(['MemoryPressure', 'DiskPressure', 'PIDPressure', 'NetworkUnavailable']);
const HEALTHY_WHEN_TRUE = new Set(['Ready', 'ConfigOK', 'KubeletReady']);

export interface NodeStatusInput {
  spec?: { unschedulable?: boolean | null } | null;
  status?: { conditions?: readonly { type?: string; status?: string }[] | null } | null;
}

export function computeNodeStatus(node: NodeStatusInput): NodeStatus {
  if (node.spec?.unschedulable === true) return 'unschedulable';
  for (const condition of node.status?.conditions ?? []) {
    const type = condition.type ?? '';
    if (HEALTHY_WHEN_FALSE.has(type) && condition.status !== 'False') return 'warning';
    if (HEALTHY_WHEN_TRUE.has(type) && condition.status !== 'True') return 'warning';
  }
  return 'running';
}
