/**
 * The simple-app form → workflow conversion (the reference does it in its web client, the
 * server then stores nodes and edges). Three shapes, as 4.8.10's `form2AppWorkflow`:
 * start → AI chat; start → dataset search → AI chat; and, when tools are selected or files
 * may be uploaded, start → tools agent with the dataset search, a readFiles node and each
 * selected tool attached by `selectedTools` edges. Node ids and input keys are the reference's
 * so its editor reads the form back from the nodes.
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
  /** Node templates as `core/app/plugin/getPreviewNode` gives them (plugins, apps). */
  selectedTools?: Record<string, unknown>[];
  chatConfig?: { fileSelectConfig?: { canSelectFile?: boolean } } & Record<string, unknown>;
}

/** The form fields of a request body, if it carries any. */
export function formOf(body: Partial<SimpleAppForm>): SimpleAppForm | undefined {
  if (body.aiSettings === undefined && body.dataset === undefined && body.selectedTools === undefined) return undefined;
  return { aiSettings: body.aiSettings, dataset: body.dataset, selectedTools: body.selectedTools, chatConfig: body.chatConfig };
}

export const START_NODE_ID = 'workflowStartNodeId';
export const SIMPLE_AI_NODE_ID = '7BdojPlukIQw';
export const SIMPLE_DATASET_NODE_ID = 'iKBoX2vIzETU';
const READ_FILES_NODE_ID = 'readFiles';

const input = (key: string, value: unknown, valueType = 'string', renderTypeList = ['hidden'], extra: Record<string, unknown> = {}) => ({ key, value, valueType, renderTypeList, label: key, ...extra });
const output = (key: string, valueType: string) => ({ id: key, key, valueType, type: 'static', label: key });
const edge = (source: string, target: string): StoreEdge => ({ source, sourceHandle: `${source}-source-right`, target, targetHandle: `${target}-target-left` });
const toolEdge = (source: string, target: string): StoreEdge => ({ source, sourceHandle: 'selectedTools', target, targetHandle: 'selectedTools' });
const question = () => input('userChatInput', [START_NODE_ID, 'userChatInput'], 'string', ['reference', 'textarea'], { required: true, toolDescription: 'User question' });

function modelInputs(ai: NonNullable<SimpleAppForm['aiSettings']>) {
  return [
    input('model', ai.model ?? 'gpt-4o-mini', 'string', ['settingLLMModel', 'reference']),
    input('temperature', ai.temperature ?? 0, 'number'),
    input('maxToken', ai.maxToken ?? 4000, 'number'),
    input('systemPrompt', ai.systemPrompt ?? '', 'string', ['textarea', 'reference']),
    input('history', ai.maxHistories ?? 6, 'chatHistory', ['numberInput', 'reference']),
  ];
}

function datasetSearchNode(dataset: NonNullable<SimpleAppForm['dataset']>, asTool: boolean): StoreNode {
  return {
    nodeId: SIMPLE_DATASET_NODE_ID,
    flowNodeType: 'datasetSearchNode',
    name: 'Dataset search',
    intro: 'Searches the selected knowledge bases',
    showStatus: true,
    version: '481',
    inputs: [
      input('datasets', dataset.datasets ?? [], 'selectDataset', ['selectDataset', 'reference']),
      input('similarity', dataset.similarity ?? 0.4, 'number', ['selectDatasetParamsModal']),
      input('limit', dataset.limit ?? 1500, 'number'),
      input('searchMode', dataset.searchMode ?? 'embedding'),
      input('usingReRank', dataset.usingReRank ?? false, 'boolean'),
      input('datasetSearchUsingExtensionQuery', dataset.datasetSearchUsingExtensionQuery ?? true, 'boolean'),
      input('datasetSearchExtensionModel', dataset.datasetSearchExtensionModel ?? ''),
      input('datasetSearchExtensionBg', dataset.datasetSearchExtensionBg ?? ''),
      asTool ? input('userChatInput', '', 'string', ['reference', 'textarea'], { required: true, toolDescription: 'The content to search for' }) : question(),
    ],
    outputs: [output('quoteQA', 'datasetQuote')],
  };
}

/** The tools shape: an agent with the knowledge bases, uploaded files and selected tools to call. */
function toolsWorkflow(form: SimpleAppForm, newId: () => string): { nodes: StoreNode[]; edges: StoreEdge[] } {
  const ai = form.aiSettings ?? {};
  const toolsId = newId();
  const agent: StoreNode = {
    nodeId: toolsId,
    flowNodeType: 'tools',
    name: 'Tool call',
    showStatus: true,
    version: '481',
    inputs: [...modelInputs(ai), input('aiChatVision', true, 'boolean'), question()],
    outputs: [output('answerText', 'string')],
  };
  const nodes: StoreNode[] = [agent];
  const edges: StoreEdge[] = [edge(START_NODE_ID, toolsId)];
  if ((form.dataset?.datasets ?? []).length > 0) {
    nodes.push(datasetSearchNode(form.dataset ?? {}, true));
    edges.push(toolEdge(toolsId, SIMPLE_DATASET_NODE_ID));
  }
  if (form.chatConfig?.fileSelectConfig?.canSelectFile) {
    nodes.push({
      nodeId: READ_FILES_NODE_ID,
      flowNodeType: 'readFiles',
      name: 'Read documents',
      intro: 'Reads the documents uploaded in this chat',
      showStatus: true,
      version: '481',
      inputs: [input('fileUrlList', [START_NODE_ID, 'userFiles'], 'arrayString', ['reference'])],
      outputs: [output('system_text', 'string')],
    });
    edges.push(toolEdge(toolsId, READ_FILES_NODE_ID));
  }
  for (const tool of form.selectedTools ?? []) {
    const nodeId = newId();
    const inputs = (Array.isArray(tool.inputs) ? tool.inputs : []) as StoreNode['inputs'];
    nodes.push({
      nodeId,
      flowNodeType: String(tool.flowNodeType ?? 'pluginModule'),
      pluginId: typeof tool.pluginId === 'string' ? tool.pluginId : undefined,
      name: typeof tool.name === 'string' ? tool.name : nodeId,
      intro: typeof tool.intro === 'string' ? tool.intro : '',
      avatar: typeof tool.avatar === 'string' ? tool.avatar : undefined,
      showStatus: tool.showStatus !== false,
      version: typeof tool.version === 'string' ? tool.version : '481',
      // An app called as a tool sees as much history as the agent.
      inputs: inputs.map((item) => (tool.flowNodeType === 'appModule' && item.key === 'history' ? { ...item, value: ai.maxHistories ?? 6 } : item)),
      outputs: (Array.isArray(tool.outputs) ? tool.outputs : []) as StoreNode['outputs'],
    });
    edges.push(toolEdge(toolsId, nodeId));
  }
  return { nodes, edges };
}

export function simpleFormToWorkflow(form: SimpleAppForm, newId: () => string = counterIds()): { nodes: StoreNode[]; edges: StoreEdge[] } {
  const ai = form.aiSettings ?? {};
  const dataset = form.dataset ?? {};
  const hasDatasets = (dataset.datasets ?? []).length > 0;

  const systemConfig: StoreNode = { nodeId: 'userGuide', flowNodeType: 'userGuide', name: 'System config', version: '481', inputs: [], outputs: [] };
  const start: StoreNode = {
    nodeId: START_NODE_ID,
    flowNodeType: 'workflowStart',
    name: 'Workflow start',
    version: '481',
    inputs: [input('userChatInput', '', 'string', ['reference', 'textarea'], { required: true, toolDescription: 'User question' })],
    outputs: [output('userChatInput', 'string'), output('userFiles', 'arrayString')],
  };
  if ((form.selectedTools ?? []).length > 0 || form.chatConfig?.fileSelectConfig?.canSelectFile) {
    const tools = toolsWorkflow(form, newId);
    return { nodes: [systemConfig, start, ...tools.nodes], edges: tools.edges };
  }
  const chat: StoreNode = {
    nodeId: SIMPLE_AI_NODE_ID,
    flowNodeType: 'chatNode',
    name: 'AI chat',
    showStatus: true,
    version: '481',
    inputs: [
      ...modelInputs(ai),
      input('isResponseAnswerText', ai.isResponseAnswerText ?? true, 'boolean'),
      input('aiChatVision', true, 'boolean'),
      question(),
      input('quoteQA', hasDatasets ? [SIMPLE_DATASET_NODE_ID, 'quoteQA'] : undefined, 'datasetQuote', ['settingDatasetQuotePrompt']),
    ],
    outputs: [output('history', 'chatHistory'), output('answerText', 'string')],
  };

  if (!hasDatasets) return { nodes: [systemConfig, start, chat], edges: [edge(START_NODE_ID, SIMPLE_AI_NODE_ID)] };
  return {
    nodes: [systemConfig, start, datasetSearchNode(dataset, false), chat],
    edges: [edge(START_NODE_ID, SIMPLE_DATASET_NODE_ID), edge(SIMPLE_DATASET_NODE_ID, SIMPLE_AI_NODE_ID)],
  };
}

/** Deterministic ids (tests); the routes pass random ones as the reference's editor makes. */
function counterIds(): () => string {
  let next = 0;
  return () => {
    next += 1;
    return `node${next}`;
  };
}
