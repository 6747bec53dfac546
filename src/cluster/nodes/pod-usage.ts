import { formatBytes, formatFraction, formatMilli, milliValue, unitValue } from './quantity.js';

/** Requests and limits of one pod (or a sum of pods): cpu in millicores, memory in bytes. */
export interface ResourceUsage {
  cpuRequests: number;
  cpuLimits: number;
  memoryRequests: number;
  memoryLimits: number;
}

export const ZERO_USAGE: ResourceUsage = { cpuRequests: 0, cpuLimits: 0, memoryRequests: 0, memoryLimits: 0 };

type ResourceList = Record<string, string> | undefined;
interface Container {
  resources?: { requests?: ResourceList; limits?: ResourceList };
}
export interface PodResourcesInput {
  spec?: { containers?: Container[]; initContainers?: Container[]; overhead?: ResourceList };
}

const cpuOf = (list: ResourceList) => (list?.cpu !== undefined ? milliValue(list.cpu) : 0);
const memoryOf = (list: ResourceList) => (list?.memory !== undefined ? unitValue(list.memory) : 0);

/**
 * kubectl's "pod requests and limits": the sum over containers, raised to the largest init
 * container per resource, plus the pod overhead (added to a limit only when it is non-zero).
 * Throws on a malformed or out-of-range quantity (imports check them first, naming the field).
 */
export function podResourceUsage(pod: PodResourcesInput): ResourceUsage {
  const usage = { ...ZERO_USAGE };
  for (const container of pod.spec?.containers ?? []) {
    usage.cpuRequests += cpuOf(container.resources?.requests);
    usage.cpuLimits += cpuOf(container.resources?.limits);
    usage.memoryRequests += memoryOf(container.resources?.requests);
    usage.memoryLimits += memoryOf(container.resources?.limits);
  }
  for (const container of pod.spec?.initContainers ?? []) {
    usage.cpuRequests = Math.max(usage.cpuRequests, cpuOf(container.resources?.requests));
    usage.cpuLimits = Math.max(usage.cpuLimits, cpuOf(container.resources?.limits));
    usage.memoryRequests = Math.max(usage.memoryRequests, memoryOf(container.resources?.requests));
    usage.memoryLimits = Math.max(usage.memoryLimits, memoryOf(container.resources?.limits));
  }
  const overhead = pod.spec?.overhead;
  usage.cpuRequests += cpuOf(overhead);
  usage.memoryRequests += memoryOf(overhead);
  if (usage.cpuLimits !== 0) usage.cpuLimits += cpuOf(overhead);
  if (usage.memoryLimits !== 0) usage.memoryLimits += memoryOf(overhead);
  return usage;
}

/** The eight `node.kubesphere.io/*` annotations for a node's summed pod usage. */
export function usageAnnotations(usage: ResourceUsage, allocatable: Record<string, string> | undefined): Record<string, string> {
  const safe = (read: (text: string) => number, text: string | undefined) => {
    try {
      return text === undefined ? 0 : read(text);
    } catch {
      return 0;
    }
  };
  const cpuAllocatable = safe(milliValue, allocatable?.cpu);
  const memoryAllocatable = safe(unitValue, allocatable?.memory);
  return {
    'node.kubesphere.io/cpu-requests': formatMilli(usage.cpuRequests),
    'node.kubesphere.io/cpu-limits': formatMilli(usage.cpuLimits),
    'node.kubesphere.io/cpu-requests-fraction': formatFraction(usage.cpuRequests, cpuAllocatable),
    'node.kubesphere.io/cpu-limits-fraction': formatFraction(usage.cpuLimits, cpuAllocatable),
    'node.kubesphere.io/memory-requests': formatBytes(usage.memoryRequests),
    'node.kubesphere.io/memory-limits': formatBytes(usage.memoryLimits),
    'node.kubesphere.io/memory-requests-fraction': formatFraction(usage.memoryRequests, memoryAllocatable),
    'node.kubesphere.io/memory-limits-fraction': formatFraction(usage.memoryLimits, memoryAllocatable),
  };
}
