/** Reading what FastGPT 4.8.10 editors and older exports store (pure parts). */
import { describe, expect, it } from 'vitest';
import { resolveChatConfig } from '../../src/domain/workflow/chat-config.js';
import { dynamicParams, buildNodeParams, fillNodeText } from '../../src/domain/workflow/interpolate.js';
import { parseLooseJson } from '../../src/domain/workflow/loose-json.js';
import { normaliseBranches, pureRunners } from '../../src/domain/workflow/pure-runners.js';
import type { NodeRunContext, RuntimeNode } from '../../src/domain/workflow/types.js';
import { modelTemperature, nodeLlm } from '../../src/platform/chat/workflow-nodes/node-deps.js';

const context = (node: RuntimeNode, params: Record<string, unknown>, variables: Record<string, unknown> = {}): NodeRunContext => ({
  node,
  params,
  variables,
  histories: [],
  query: [],
  runtimeNodes: [node],
  runtimeEdges: [],
  mode: 'chat',
  stream: false,
  emit: () => undefined,
  isAborted: () => false,
  runBudget: { remaining: 200 },
});

describe('answer node', () => {
  it('answers the text after a new line as it is (a backslash-n stays), objects as indented JSON', async () => {
    const node: RuntimeNode = { nodeId: 'a', flowNodeType: 'answerNode', inputs: [], outputs: [] };
    expect((await pureRunners.answerNode!(context(node, { text: 'x\\ny C:\\new' }))).answerText).toBe('\nx\\ny C:\\new');
    expect((await pureRunners.answerNode!(context(node, { text: { s: 'p\nq' } }))).answerText).toBe('\n{\n  "s": "p\\nq"\n}');
  });
});

describe('ifElse branches', () => {
  const ref = ['n', 'o'];
  it('a flat 4.8.0 condition list is one IF branch joined by the node condition, in any case', () => {
    expect(normaliseBranches([{ variable: ref, condition: 'isEmpty', value: '' }, { variable: ref, condition: 'equalTo', value: 'x' }], 'Or')).toEqual([
      { condition: 'OR', list: [{ variable: ref, condition: 'isEmpty', value: '' }, { variable: ref, condition: 'equalTo', value: 'x' }] },
    ]);
    expect(normaliseBranches([{ variable: ref, condition: 'isEmpty' }], undefined)[0]!.condition).toBe('AND');
  });
  it('ELSE IF lists keep their branches; "or" reads as OR', () => {
    expect(normaliseBranches([{ condition: 'or', list: [] }, { condition: 'AND', list: [] }], 'And').map((b) => b.condition)).toEqual(['OR', 'AND']);
    expect(normaliseBranches('nope', 'And')).toEqual([]);
  });
});

describe('dynamic inputs', () => {
  const node = (key: string): RuntimeNode => ({
    nodeId: 'h',
    flowNodeType: 'httpRequest468',
    inputs: [
      { key, renderTypeList: ['addInputParam'] },
      { key: 'searchKey', canEdit: true, value: ['src', 'out'] },
      { key: 'system_addInputParam', renderTypeList: ['addInputParam'] },
    ],
    outputs: [],
  });
  const src: RuntimeNode = { nodeId: 'src', flowNodeType: 'x', inputs: [], outputs: [{ id: 'out', key: 'k', value: 'Oslo' }] };
  it('are gathered under the first dynamic-input key, the older DYNAMIC_INPUT_KEY included', () => {
    const legacy = node('DYNAMIC_INPUT_KEY');
    const params = buildNodeParams(legacy, [legacy, src], {});
    expect(params.DYNAMIC_INPUT_KEY).toEqual({ searchKey: 'Oslo' });
    expect(params.searchKey).toBe('Oslo');
    expect(dynamicParams(legacy, params)).toEqual({ searchKey: 'Oslo' });
  });
  it('{{$node.x$}} finds an output by id, else by key', () => {
    expect(fillNodeText('{{$src.out$}}/{{$src.k$}}', [src], {})).toBe('Oslo/Oslo');
  });
});

describe('loose JSON bodies', () => {
  it('accepts comments and trailing commas outside strings, as JSON5 does', () => {
    expect(parseLooseJson('{"a": "x, }", // note\n "b": [1, 2,], /* c */ }')).toEqual({ a: 'x, }', b: [1, 2] });
    expect(parseLooseJson('{"url":"http://h/x"}')).toEqual({ url: 'http://h/x' });
  });
  it('still refuses what is not JSON', () => {
    expect(() => parseLooseJson('{"a": }')).toThrow();
    expect(() => parseLooseJson("{'a': 1}")).toThrow();
  });
});

describe('chat config of apps keeping it in the system-config node', () => {
  const nodes = [
    {
      flowNodeType: 'userGuide',
      inputs: [
        { key: 'welcomeText', value: 'Hi' },
        { key: 'variables', value: [{ key: 'lang' }] },
        { key: 'questionGuide', value: true },
        { key: 'tts', value: { type: 'model' } },
        { key: 'scheduleTrigger', value: null },
      ],
    },
  ];
  it('node values are the base; chatConfig goes on top; empty lists and texts fall back', () => {
    const config = resolveChatConfig(nodes, { variables: [], welcomeText: '', questionGuide: false });
    expect(config).toMatchObject({ variables: [{ key: 'lang' }], welcomeText: 'Hi', questionGuide: false, ttsConfig: { type: 'model' } });
    expect(config.scheduledTriggerConfig).toBeUndefined();
  });
  it("the chat's snapshot wins, then chatConfig", () => {
    expect(resolveChatConfig(nodes, { variables: [{ key: 'cfg' }] }).variables).toEqual([{ key: 'cfg' }]);
    expect(resolveChatConfig(nodes, { variables: [{ key: 'cfg' }] }, { variableList: [{ key: 'chat' }], welcomeText: 'W' })).toMatchObject({ variables: [{ key: 'chat' }], welcomeText: 'W' });
    expect(resolveChatConfig([], {})).toMatchObject({ variables: [], welcomeText: '', ttsConfig: { type: 'web' } });
  });
});

describe('LLM settings of nodes', () => {
  const model = { model: 'm', name: 'M', maxContext: 1, maxResponse: 1, quoteMaxToken: 1, maxTemperature: 1.2 } as Parameters<typeof modelTemperature>[0];
  it('temperature: the editor scale 0–10 onto the model range, at least 0.01', () => {
    expect(modelTemperature(model, 5)).toBe(0.6);
    expect(modelTemperature(model, '10')).toBe(1.2);
    expect(modelTemperature(model, 0)).toBe(0.01);
    expect(modelTemperature(model, 'x')).toBe(0.01);
  });
  it('a model this deployment lacks falls back to the default one', () => {
    const resolveLlm = (name: unknown) => {
      if (name === undefined) return { model, endpoint: { baseUrl: 'b' } };
      if (name === 'm') return { model, endpoint: { baseUrl: 'named' } };
      throw new Error('unknown');
    };
    expect(nodeLlm({ resolveLlm }, 'gpt-3.5-turbo').endpoint.baseUrl).toBe('b');
    expect(nodeLlm({ resolveLlm }, 'm').endpoint.baseUrl).toBe('named');
  });
});

describe('simple form → workflow', () => {
  it('tools or file uploads make the tools shape: agent, knowledge base, readFiles and each tool attached', async () => {
    const { simpleFormToWorkflow } = await import('../../src/domain/workflow/simple-app.js');
    const tool = { flowNodeType: 'appModule', pluginId: 'a1', name: 'Helper', inputs: [{ key: 'history', value: 6 }, { key: 'userChatInput' }], outputs: [] };
    const { nodes, edges } = simpleFormToWorkflow({
      aiSettings: { model: 'm', maxHistories: 3 },
      dataset: { datasets: [{ datasetId: 'd1' }] },
      selectedTools: [tool],
      chatConfig: { fileSelectConfig: { canSelectFile: true } },
    });
    expect(nodes.map((n) => [n.nodeId, n.flowNodeType])).toEqual([
      ['userGuide', 'userGuide'],
      ['workflowStartNodeId', 'workflowStart'],
      ['node1', 'tools'],
      ['iKBoX2vIzETU', 'datasetSearchNode'],
      ['readFiles', 'readFiles'],
      ['node2', 'appModule'],
    ]);
    expect(edges).toEqual([
      { source: 'workflowStartNodeId', sourceHandle: 'workflowStartNodeId-source-right', target: 'node1', targetHandle: 'node1-target-left' },
      ...['iKBoX2vIzETU', 'readFiles', 'node2'].map((target) => ({ source: 'node1', sourceHandle: 'selectedTools', target, targetHandle: 'selectedTools' })),
    ]);
    expect(nodes[3]!.inputs.find((i) => i.key === 'userChatInput')).toMatchObject({ value: '', toolDescription: expect.any(String) });
    expect(nodes[5]!.inputs.find((i) => i.key === 'history')?.value).toBe(3);
  });
});
