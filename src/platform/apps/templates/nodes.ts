/** Builders for the workflow nodes our bundled templates use (FastGPT 4.8.10 node shapes). */
type Json = Record<string, unknown>;

const input = (key: string, valueType: string, renderTypeList: string[], value: unknown, extra: Json = {}) => ({ key, valueType, renderTypeList, label: key, value, ...extra });
const output = (key: string, valueType: string, extra: Json = {}) => ({ id: key, key, valueType, label: key, type: 'static', ...extra });

export function userGuide(welcomeText: string): Json {
  return {
    nodeId: 'userGuide',
    name: 'System configuration',
    intro: 'Welcome text, variables, question guide',
    avatar: 'core/workflow/template/systemConfig',
    flowNodeType: 'userGuide',
    position: { x: -600, y: -100 },
    version: '481',
    inputs: [input('welcomeText', 'string', ['hidden'], welcomeText)],
    outputs: [],
  };
}

export function workflowStart(): Json {
  return {
    nodeId: 'workflowStartNodeId',
    name: 'Workflow start',
    avatar: 'core/workflow/template/workflowStart',
    flowNodeType: 'workflowStart',
    position: { x: -100, y: 100 },
    version: '481',
    inputs: [input('userChatInput', 'string', ['reference', 'textarea'], undefined, { required: true, toolDescription: 'User question' })],
    outputs: [output('userChatInput', 'string')],
  };
}

export function chatNode(nodeId: string, systemPrompt: string, x: number, quoteFrom?: [string, string]): Json {
  return {
    nodeId,
    name: 'AI chat',
    avatar: 'core/workflow/template/aiChat',
    flowNodeType: 'chatNode',
    showStatus: true,
    position: { x, y: 0 },
    version: '481',
    inputs: [
      input('model', 'string', ['settingLLMModel', 'reference'], 'gpt-4o-mini'),
      input('temperature', 'number', ['hidden'], 0),
      input('maxToken', 'number', ['hidden'], 2000),
      input('isResponseAnswerText', 'boolean', ['hidden'], true),
      input('systemPrompt', 'string', ['textarea', 'reference'], systemPrompt),
      input('history', 'chatHistory', ['numberInput', 'reference'], 6),
      input('userChatInput', 'string', ['reference', 'textarea'], ['workflowStartNodeId', 'userChatInput']),
      input('quoteQA', 'datasetQuote', ['settingDatasetQuotePrompt'], quoteFrom),
    ],
    outputs: [output('history', 'chatHistory'), output('answerText', 'string')],
  };
}

export function datasetSearch(nodeId: string, x: number): Json {
  return {
    nodeId,
    name: 'Knowledge base search',
    avatar: 'core/workflow/template/datasetSearch',
    flowNodeType: 'datasetSearchNode',
    showStatus: true,
    position: { x, y: 0 },
    version: '481',
    inputs: [
      input('datasets', 'selectDataset', ['selectDataset', 'reference'], []),
      input('similarity', 'number', ['selectDatasetParamsModal'], 0.4),
      input('limit', 'number', ['hidden'], 3000),
      input('searchMode', 'string', ['hidden'], 'embedding'),
      input('usingReRank', 'boolean', ['hidden'], false),
      input('userChatInput', 'string', ['reference', 'textarea'], ['workflowStartNodeId', 'userChatInput']),
    ],
    outputs: [output('quoteQA', 'datasetQuote')],
  };
}

export function httpNode(nodeId: string, url: string, x: number): Json {
  return {
    nodeId,
    name: 'HTTP request',
    avatar: 'core/workflow/template/httpRequest',
    flowNodeType: 'httpRequest468',
    showStatus: true,
    position: { x, y: 0 },
    version: '481',
    inputs: [
      input('system_addInputParam', 'dynamic', ['addInputParam'], undefined),
      input('q', 'string', ['reference'], ['workflowStartNodeId', 'userChatInput'], { canEdit: true }),
      input('system_httpMethod', 'string', ['custom'], 'GET'),
      input('system_httpReqUrl', 'string', ['hidden'], url),
      input('system_httpHeader', 'any', ['custom'], []),
      input('system_httpParams', 'any', ['hidden'], [{ key: 'q', type: 'string', value: '{{q}}' }]),
      input('system_httpJsonBody', 'any', ['hidden'], ''),
    ],
    outputs: [output('system_addOutputParam', 'dynamic', { type: 'dynamic' }), output('error', 'object'), output('httpRawResponse', 'any')],
  };
}

export const edge = (source: string, target: string) => ({ source, target, sourceHandle: `${source}-source-right`, targetHandle: `${target}-target-left` });
