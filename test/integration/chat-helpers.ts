import type { FastifyInstance } from 'fastify';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { fakeModelConfig, type FakeOpenAi, startFakeOpenAi } from '../helpers/fake-openai.js';
import { ok } from './apps-helpers.js';

export async function startChatApp(
  extraEnv: (fake: FakeOpenAi) => Record<string, string> = () => ({}),
  beforeReady?: (app: FastifyInstance) => void | Promise<void>,
): Promise<{ t: TestApp; fake: FakeOpenAi }> {
  const fake = await startFakeOpenAi();
  const dir = await mkdtemp(join(tmpdir(), 'chat-'));
  await writeFile(join(dir, 'config.json'), JSON.stringify(fakeModelConfig(fake.baseUrl)));
  const t = await buildTestApp({ MODEL_CONFIG_PATH: join(dir, 'config.json'), SSRF_ALLOW_PRIVATE: 'true', ...extraEnv(fake) }, beforeReady);
  return { t, fake };
}

const ref = (nodeId: string, key: string) => [nodeId, key];

/** start → AI chat (the simple-app shape). */
export const simpleChatGraph = {
  nodes: [
    { nodeId: 'userGuide', flowNodeType: 'userGuide', name: 'System config', inputs: [], outputs: [] },
    {
      nodeId: 'workflowStartNodeId',
      flowNodeType: 'workflowStart',
      name: 'Start',
      inputs: [{ key: 'userChatInput', valueType: 'string', value: '' }],
      outputs: [{ id: 'userChatInput', key: 'userChatInput', valueType: 'string' }],
    },
    {
      nodeId: 'ai',
      flowNodeType: 'chatNode',
      name: 'AI chat',
      showStatus: true,
      inputs: [
        { key: 'model', value: 'fake-llm' },
        { key: 'systemPrompt', value: 'Be brief.' },
        { key: 'history', value: 6, valueType: 'chatHistory' },
        { key: 'userChatInput', value: ref('workflowStartNodeId', 'userChatInput'), valueType: 'string' },
      ],
      outputs: [{ id: 'answerText', key: 'answerText', valueType: 'string' }],
    },
  ],
  edges: [{ source: 'workflowStartNodeId', sourceHandle: 'workflowStartNodeId-source-right', target: 'ai', targetHandle: 'ai-target-left' }],
  chatConfig: { welcomeText: 'Hello there', variables: [{ id: 'v1', key: 'name', label: 'Name', type: 'input' }] },
};

/** start → a fixed answer: chats that need no model. */
export const answerOnlyGraph = {
  nodes: [
    { nodeId: 'start', flowNodeType: 'workflowStart', name: 'Start', inputs: [], outputs: [{ id: 'userChatInput', key: 'userChatInput', valueType: 'string' }] },
    { nodeId: 'answer', flowNodeType: 'answerNode', name: 'Answer', inputs: [{ key: 'text', value: 'noted' }], outputs: [] },
  ],
  edges: [{ source: 'start', sourceHandle: 'start-source-right', target: 'answer', targetHandle: 'answer-target-left' }],
  chatConfig: {},
};

/** start → ifElse (text contains "vip") → answer nodes using a variable. */
export const branchGraph = {
  nodes: [
    {
      nodeId: 'start',
      flowNodeType: 'workflowStart',
      name: 'Start',
      inputs: [],
      outputs: [{ id: 'userChatInput', key: 'userChatInput', valueType: 'string' }],
    },
    {
      nodeId: 'if',
      flowNodeType: 'ifElseNode',
      name: 'Branch',
      inputs: [{ key: 'ifElseList', value: [{ condition: 'AND', list: [{ variable: ref('start', 'userChatInput'), condition: 'include', value: 'vip' }] }] }],
      outputs: [{ id: 'ifElseResult', key: 'ifElseResult' }],
    },
    { nodeId: 'vip', flowNodeType: 'answerNode', name: 'VIP', inputs: [{ key: 'text', value: 'Welcome back {{name}}' }], outputs: [] },
    { nodeId: 'other', flowNodeType: 'answerNode', name: 'Other', inputs: [{ key: 'text', value: 'Hi guest' }], outputs: [] },
  ],
  edges: [
    { source: 'start', sourceHandle: 'start-source-right', target: 'if', targetHandle: 'if-target-left' },
    { source: 'if', sourceHandle: 'if-source-IF', target: 'vip', targetHandle: 'vip-target-left' },
    { source: 'if', sourceHandle: 'if-source-ELSE', target: 'other', targetHandle: 'other-target-left' },
  ],
  chatConfig: {},
};

/** A userSelect that stops the run (Confirm / Cancel), then answers the option picked. */
export const selectGraph = {
  nodes: [
    { nodeId: 'start', flowNodeType: 'workflowStart', name: 'Start', inputs: [], outputs: [] },
    {
      nodeId: 'sel',
      flowNodeType: 'userSelect',
      name: 'Pick',
      inputs: [
        { key: 'description', value: 'Continue?' },
        { key: 'userSelectOptions', value: [{ key: 'y', value: 'Confirm' }, { key: 'n', value: 'Cancel' }] },
      ],
      outputs: [{ id: 'selectResult', key: 'selectResult' }],
    },
    { nodeId: 'yes', flowNodeType: 'answerNode', name: 'Yes', inputs: [{ key: 'text', value: 'Done: {{$sel.selectResult$}}' }], outputs: [] },
    { nodeId: 'no', flowNodeType: 'answerNode', name: 'No', inputs: [{ key: 'text', value: 'Stopped' }], outputs: [] },
  ],
  edges: [
    { source: 'start', sourceHandle: 'start-source-right', target: 'sel', targetHandle: 'sel-target-left' },
    { source: 'sel', sourceHandle: 'sel-source-y', target: 'yes', targetHandle: 'yes-target-left' },
    { source: 'sel', sourceHandle: 'sel-source-n', target: 'no', targetHandle: 'no-target-left' },
  ],
  chatConfig: {},
};

export const START_NODE = { nodeId: 'start', flowNodeType: 'workflowStart', name: 'Start', inputs: [], outputs: [{ id: 'userChatInput', key: 'userChatInput' }] };

/** A publishable graph: the start node, then each node after the one before (a straight chain). */
export function chain(...nodes: Record<string, unknown>[]) {
  const all = [START_NODE, ...nodes] as { nodeId: string }[];
  const edges = all.slice(1).map((node, i) => ({ source: all[i]!.nodeId, sourceHandle: `${all[i]!.nodeId}-source-right`, target: node.nodeId, targetHandle: `${node.nodeId}-target-left` }));
  return { nodes: all, edges, chatConfig: {} };
}

/**
 * start → an agent (`tools` node on the fake model) offered `tools` (the fake calls the first in
 * its first round), then `after` once it answers.
 */
export function agentGraph(tools: Record<string, unknown>[], options: { after?: Record<string, unknown>[]; showStatus?: boolean } = {}) {
  const after = options.after ?? [];
  const agent = {
    nodeId: 'agent',
    flowNodeType: 'tools',
    name: 'Agent',
    ...(options.showStatus ? { showStatus: true } : {}),
    inputs: [
      { key: 'model', value: 'fake-llm' },
      { key: 'userChatInput', value: ['start', 'userChatInput'] },
    ],
    outputs: [{ id: 'answerText', key: 'answerText' }],
  };
  return {
    nodes: [START_NODE, agent, ...tools, ...after],
    edges: [
      { source: 'start', sourceHandle: 'start-source-right', target: 'agent', targetHandle: 'agent-target-left' },
      ...tools.map((tool) => ({ source: 'agent', sourceHandle: 'selectedTools', target: tool.nodeId, targetHandle: 'selectedTools' })),
      ...after.map((node) => ({ source: 'agent', sourceHandle: 'agent-source-right', target: node.nodeId, targetHandle: `${node.nodeId}-target-left` })),
    ],
    chatConfig: {},
  };
}

/** start → readFiles over the question's files → an answer of the text it read. */
export const readFilesGraph = {
  nodes: [
    { nodeId: 'start', flowNodeType: 'workflowStart', name: 'Start', inputs: [], outputs: [{ id: 'userFiles', key: 'userFiles' }] },
    { nodeId: 'files', flowNodeType: 'readFiles', name: 'Read', inputs: [{ key: 'fileUrlList', value: ['start', 'userFiles'], valueType: 'arrayString' }], outputs: [{ id: 'system_text', key: 'system_text' }] },
    { nodeId: 'ans', flowNodeType: 'answerNode', name: 'Answer', inputs: [{ key: 'text', value: '{{$files.system_text$}}' }], outputs: [] },
  ],
  edges: [
    { source: 'start', sourceHandle: 'start-source-right', target: 'files', targetHandle: 'files-target-left' },
    { source: 'files', sourceHandle: 'files-source-right', target: 'ans', targetHandle: 'ans-target-left' },
  ],
  chatConfig: {},
};

/** start → a dataset search over `datasets` (embedding, no similarity floor) → an answer quoting what it found. */
export function searchGraph(datasets: unknown, query: unknown = ['start', 'userChatInput']) {
  const search = {
    nodeId: 'search',
    flowNodeType: 'datasetSearchNode',
    name: 'Search',
    inputs: [
      { key: 'datasets', value: datasets },
      { key: 'userChatInput', value: query },
      { key: 'similarity', value: 0 },
      { key: 'limit', value: 1500 },
      { key: 'searchMode', value: 'embedding' },
    ],
    outputs: [{ id: 'quoteQA', key: 'quoteQA' }],
  };
  return chain(search, { nodeId: 'ans', flowNodeType: 'answerNode', name: 'Answer', inputs: [{ key: 'text', value: ['search', 'quoteQA'] }], outputs: [] });
}

export async function createPublishedApp(
  t: TestApp,
  token: string,
  name: string,
  graph: { nodes: unknown[]; edges: unknown[]; chatConfig: unknown },
  type: 'advanced' | 'plugin' = 'advanced',
): Promise<string> {
  const appId = (await ok(t, token, 'POST', '/core/app/create', { name, type, modules: graph.nodes, edges: graph.edges, chatConfig: graph.chatConfig })) as string;
  await ok(t, token, 'POST', `/core/app/version/publish?appId=${appId}`, { ...graph, isPublish: true, versionName: 'v1' });
  return appId;
}

/** Splits an SSE body into frames of {event?, data}. */
export function sseFrames(body: string): { event?: string; data: string }[] {
  return body
    .split('\n\n')
    .filter((block) => block.trim())
    .map((block) => {
      const lines = block.split('\n');
      const event = lines.find((l) => l.startsWith('event: '))?.slice(7);
      const data = lines.find((l) => l.startsWith('data: '))?.slice(6) ?? '';
      return event ? { event, data } : { data };
    });
}
