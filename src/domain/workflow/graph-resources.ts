/**
 * The datasets and apps a workflow graph names in its node settings: the `datasets` list of
 * dataset search nodes and the `pluginId` of nodes that run another app. A graph sent by a
 * caller (chatTest, debug) may only use resources the caller can read, so these are checked
 * before it runs. Values wired from other nodes are only known at run time and are checked then.
 */
import { isRecord, recordsOf } from './input-shapes.js';

const APP_NODE_TYPES = new Set(['pluginModule', 'appModule']);

export interface GraphResources {
  datasetIds: string[];
  appIds: string[];
}

/** Dataset ids of a `datasets` input value: `[{datasetId}]` (a reference tuple names none). */
export function datasetIdsOf(value: unknown): string[] {
  return recordsOf(value).flatMap((entry) => (typeof entry.datasetId === 'string' ? [entry.datasetId] : []));
}

export function graphResources(nodes: readonly unknown[]): GraphResources {
  const datasetIds = new Set<string>();
  const appIds = new Set<string>();
  for (const node of nodes) {
    if (!isRecord(node)) continue;
    if (node.flowNodeType === 'datasetSearchNode' && Array.isArray(node.inputs)) {
      const input = node.inputs.find((item) => isRecord(item) && item.key === 'datasets') as Record<string, unknown> | undefined;
      for (const id of datasetIdsOf(input?.value)) datasetIds.add(id);
    }
    // The abandoned runApp node names its app in the `app` input.
    if (node.flowNodeType === 'app' && Array.isArray(node.inputs)) {
      const chosen = (node.inputs.find((item) => isRecord(item) && item.key === 'app') as Record<string, unknown> | undefined)?.value;
      if (isRecord(chosen) && typeof chosen.id === 'string' && chosen.id) appIds.add(chosen.id);
    }
    // Ids with a source prefix (`community-…`) are built-in system plugins, not apps of a team.
    const pluginId = node.pluginId;
    if (typeof node.flowNodeType === 'string' && APP_NODE_TYPES.has(node.flowNodeType) && typeof pluginId === 'string' && pluginId && !pluginId.includes('-')) appIds.add(pluginId);
  }
  return { datasetIds: [...datasetIds], appIds: [...appIds] };
}
