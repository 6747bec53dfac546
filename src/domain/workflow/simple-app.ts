/**
 * The simple-app form → workflow conversion (the reference does it in its web client).
 * Produces the dataset shape (start → search → AI chat) or the plain shape
 * (start → AI chat). Tool-calling forms are not converted: see docs/chat.md.
 */
import type { StoreEdge, StoreNode } from './types.js';

export interface SimpleAppForm {
  aiSettings?: { model?: string; systemPrompt?: string; temperature?: number; maxToken?: number; isResponseAnswerText?: boolean; maxHistories?: number };
  dataset?: {
    datasets?: { datasetId: string }[];
    searchMode?: string;
    similarity?: number;
    limit?: number;
    usingReRank?: boolean;
    datasetSearchUsingExtensionQuery?: boolean;
    datasetSearchExtensionModel?: string;
    datasetSearchExtensionBg?: string;
  };
}

export const START_NODE_ID = 'workflowStartNodeId';
export const SIMPLE_AI_NODE_ID = '7BdojPlukIQw';
export const SIMPLE_DATASET_NODE_ID = 'iKBoX2vIzETU';

const input = (key: string, value: unknown, valueType = 'string', renderTypeList = ['hidden']) => ({ key, value, valueType, renderTypeList, label: key });
const output = (key: string, valueType: string) => ({ id: key, key, valueType, type: 'static', label: key });

export function simpleFormToWorkflow(form: SimpleAppForm): { nodes: StoreNode[]; edges: StoreEdge[] } {
  const ai = form.aiSettings ?? {};
  const dataset = form.dataset ?? {};
  const datasets = dataset.datasets ?? [];
  const hasDatasets = datasets.length > 0;

  const systemConfig: StoreNode = { nodeId: 'userGuide', flowNodeType: 'userGuide', name: 'System config', inputs: [], outputs: [] };
  const start: StoreNode = {
    nodeId: START_NODE_ID,
    flowNodeType: 'workflowStart',
    name: 'Workflow start',
    inputs: [input('userChatInput', '', 'string', ['reference', 'textarea'])],
    outputs: [output('userChatInput', 'string'), output('userFiles', 'arrayString')],
  };
  const chat: StoreNode = {
    nodeId: SIMPLE_AI_NODE_ID,
    flowNodeType: 'chatNode',
    name: 'AI chat',
    showStatus: true,
    inputs: [
      input('model', ai.model ?? 'gpt-4o-mini'),
      input('temperature', ai.temperature ?? 0, 'number'),
      input('maxToken', ai.maxToken ?? 4000, 'number'),
      input('isResponseAnswerText', ai.isResponseAnswerText ?? true, 'boolean'),
      input('systemPrompt', ai.systemPrompt ?? ''),
      input('history', ai.maxHistories ?? 6, 'chatHistory'),
      input('aiChatVision', true, 'boolean'),
      input('userChatInput', [START_NODE_ID, 'userChatInput'], 'string', ['reference', 'textarea']),
      input('quoteQA', hasDatasets ? [SIMPLE_DATASET_NODE_ID, 'quoteQA'] : undefined, 'datasetQuote', ['settingDatasetQuotePrompt']),
    ],
    outputs: [output('history', 'chatHistory'), output('answerText', 'string')],
  };
  const edge = (source: string, target: string): StoreEdge => ({ source, sourceHandle: `${source}-source-right`, target, targetHandle: `${target}-target-left` });

  if (!hasDatasets) return { nodes: [systemConfig, start, chat], edges: [edge(START_NODE_ID, SIMPLE_AI_NODE_ID)] };

  const search: StoreNode = {
    nodeId: SIMPLE_DATASET_NODE_ID,
    flowNodeType: 'datasetSearchNode',
    name: 'Dataset search',
    showStatus: true,
    inputs: [
      input('datasets', datasets, 'selectDataset', ['selectDataset']),
      input('similarity', dataset.similarity ?? 0.4, 'number'),
      input('limit', dataset.limit ?? 1500, 'number'),
      input('searchMode', dataset.searchMode ?? 'embedding'),
      input('usingReRank', dataset.usingReRank ?? false, 'boolean'),
      input('datasetSearchUsingExtensionQuery', dataset.datasetSearchUsingExtensionQuery ?? true, 'boolean'),
      input('datasetSearchExtensionModel', dataset.datasetSearchExtensionModel ?? ''),
      input('datasetSearchExtensionBg', dataset.datasetSearchExtensionBg ?? ''),
      input('userChatInput', [START_NODE_ID, 'userChatInput'], 'string', ['reference', 'textarea']),
    ],
    outputs: [output('quoteQA', 'datasetQuote')],
  };
  return {
    nodes: [systemConfig, start, search, chat],
    edges: [edge(START_NODE_ID, SIMPLE_DATASET_NODE_ID), edge(SIMPLE_DATASET_NODE_ID, SIMPLE_AI_NODE_ID)],
  };
}
