/**
 * Node inputs as FastGPT 4.8.10 exports carry them: literal variable updates ['', value] with
 * their value type, ELSE IF lists, lower-case methods and string numbers, `{{…}}` in header
 * keys, typed dynamic outputs of the HTTP node, JSON5 bodies, apps called as nodes (appModule
 * with the child's variables, the abandoned `app` node) and the errors of missing inputs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { ok } from './apps-helpers.js';
import { startChatApp } from './chat-helpers.js';
import { importWorkflow, loadWorkflow, ranNodes, responseOf, setInput, startJsonService } from './workflow-helpers.js';

let t: TestApp;
let fake: FakeOpenAi;
let tok: string;
let service: Awaited<ReturnType<typeof startJsonService>>;

const completions = (payload: Record<string, unknown>) => t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: authHeaders(tok), payload });

beforeAll(async () => {
  ({ t, fake } = await startChatApp());
  await createUser(t, { username: 'inputs', password: 'password-n1' });
  tok = await login(t, 'inputs', 'password-n1');
  service = await startJsonService(({ url }) => (url.startsWith('/stats') ? { data: { total: '42', tags: ['blue', 'green'] } } : { ok: true }));
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
  await service?.close();
});

describe('variables, branches and HTTP nodes', () => {
  it('runs the IF branch, types the outputs and keeps the typed variables of the chat', async () => {
    const workflow = loadWorkflow('node-inputs');
    setInput(workflow, 'statsRequest', 'system_httpReqUrl', `${service.url}/stats`);
    setInput(workflow, 'reportPost01', 'system_httpReqUrl', `${service.url}/report`);
    const appId = await importWorkflow(t, tok, 'Counter', workflow);
    const res = await completions({ appId, chatId: 'count1', detail: true, messages: [{ role: 'user', content: 'ada' }] });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(ranNodes(body)).toEqual(['448745', 'setCount0001', 'countCheck01', 'statsRequest', 'setTotal0001', 'reportPost01', 'countAnswer']);
    expect(responseOf(body, 'countCheck01')?.ifElseResult).toBe('IF');
    expect(responseOf(body, 'setCount0001')?.updateVarResult).toEqual([41]);
    expect(responseOf(body, 'setTotal0001')?.updateVarResult).toEqual([42]);

    const [stats, report] = service.received.slice(-2);
    expect(stats).toMatchObject({ url: '/stats?n=41', method: 'GET', headers: { 'x-count': '41', 'x-ada': 'yes' } });
    expect(report).toMatchObject({ url: '/report?n=41', method: 'POST', body: { n: 41, total: 42, tag: 'blue' } });
    expect(body.choices[0].message.content).toBe('\ncount=41 total=42 tag=blue');

    const init = await ok(t, tok, 'GET', '/core/chat/init', { appId, chatId: 'count1' });
    expect(init.variables).toMatchObject({ count: 41, total: 42 });
    expect(init.app.chatConfig.variables.map((v: { key: string }) => v.key)).toEqual(['count', 'total']);
  });
});

describe('HTTP bodies', () => {
  const httpGraph = (url: string, contentType: string, extra: Record<string, unknown>[]) => {
    const workflow = loadWorkflow('node-inputs');
    const node = structuredClone(workflow.nodes.find((n) => n.nodeId === 'reportPost01')!) as { inputs: { key: string; value?: unknown }[] };
    node.inputs = [...node.inputs.filter((i) => !extra.some((e) => e.key === i.key)), ...(extra as { key: string; value?: unknown }[])];
    const start = workflow.nodes.find((n) => n.nodeId === '448745')!;
    const graph = { nodes: [start, node], edges: [{ source: '448745', target: 'reportPost01', sourceHandle: '448745-source-right', targetHandle: 'reportPost01-target-left' }] };
    setInput(graph, 'reportPost01', 'system_httpReqUrl', url);
    setInput(graph, 'reportPost01', 'system_httpContentType', contentType);
    return graph;
  };

  it('form-data is sent as multipart with the fields filled', async () => {
    const graph = httpGraph(`${service.url}/form`, 'form-data', [
      { key: 'system_httpFormBody', renderTypeList: ['hidden'], valueType: 'any', value: [{ key: 'city', type: 'string', value: '{{$448745.userChatInput$}}' }, { key: 'note', type: 'string', value: 'a "quoted" word' }] },
      { key: 'system_httpHeader', renderTypeList: ['custom'], valueType: 'any', value: [{ key: 'Content-Type', type: 'string', value: 'text/plain' }] },
    ]);
    const appId = await importWorkflow(t, tok, 'Form poster', graph);
    const res = await completions({ appId, detail: true, messages: [{ role: 'user', content: 'Oslo' }] });
    expect(res.statusCode, res.body).toBe(200);
    const seen = service.received.at(-1)!;
    const boundary = /^multipart\/form-data; boundary=(.+)$/.exec(String(seen.headers['content-type']))?.[1];
    expect(boundary).toBeTruthy();
    expect(seen.body).toBe(
      `--${boundary}\r\nContent-Disposition: form-data; name="city"\r\n\r\nOslo\r\n--${boundary}\r\nContent-Disposition: form-data; name="note"\r\n\r\na "quoted" word\r\n--${boundary}--\r\n`,
    );
    expect(responseOf(res.json(), 'reportPost01')?.body).toEqual({ city: 'Oslo', note: 'a "quoted" word' });
  });

  it('a Content-Type typed in any letter case is kept, not doubled', async () => {
    const graph = httpGraph(`${service.url}/json`, 'json', [
      { key: 'system_httpHeader', renderTypeList: ['custom'], valueType: 'any', value: [{ key: 'Content-Type', type: 'string', value: 'application/vnd.api+json' }] },
      { key: 'system_httpJsonBody', renderTypeList: ['hidden'], valueType: 'any', value: '{"q": "{{$448745.userChatInput$}}"}' },
    ]);
    const appId = await importWorkflow(t, tok, 'Typed poster', graph);
    const res = await completions({ appId, messages: [{ role: 'user', content: 'x' }] });
    expect(res.statusCode, res.body).toBe(200);
    expect(service.received.at(-1)).toMatchObject({ method: 'POST', headers: { 'content-type': 'application/vnd.api+json' }, body: { q: 'x' } });
  });
});

describe('a system plugin template kept as a team plugin', () => {
  it('its HTTP node naming the plugin (`mathExprVal`) runs the built-in callback', async () => {
    const pluginId = await importWorkflow(t, tok, 'My calculator', loadWorkflow('plugin-math-template'), 'plugin');
    const res = await completions({ appId: pluginId, detail: true, variables: { 数学表达式: '3 * (4 + 5)' } });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(ranNodes(body)).toEqual(['ioNyiO62aWcG', 'hzO1JnuLrKpK', 'sowtxkCPjvb7']);
    expect(responseOf(body, 'hzO1JnuLrKpK')).toMatchObject({ body: { expr: '3 * (4 + 5)' }, httpResult: { result: '27' } });
    expect(responseOf(body, 'sowtxkCPjvb7')?.pluginOutput).toEqual({ result: '27' });
  });
});

describe('apps called as nodes', () => {
  it('appModule passes its extra inputs as the child variables; the abandoned app node runs its chosen app', async () => {
    const translator = await importWorkflow(t, tok, 'Translator child', loadWorkflow('chat-guide-variables'), 'simple');
    const greeter = await importWorkflow(t, tok, 'Greeter child', loadWorkflow('fixed-opening-ending'));
    const workflow = loadWorkflow('app-calls');
    (workflow.nodes.find((n) => n.nodeId === 'translatorApp') as { pluginId: string }).pluginId = translator;
    setInput(workflow, 'legacyRunApp', 'app', { id: greeter });
    const appId = await importWorkflow(t, tok, 'Caller', workflow);
    const res = await completions({ appId, detail: true, messages: [{ role: 'user', content: 'good morning' }] });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(ranNodes(body)).toEqual(['448745', 'translatorApp', 'legacyRunApp']);
    const systemPrompts = fake.requests
      .filter((r) => r.path === '/v1/chat/completions')
      .slice(-2)
      .map((r) => (r.body as { messages: { role: string; content: string }[] }).messages.find((m) => m.role === 'system')?.content);
    expect(systemPrompts[0]).toBe('Translate my question into English; do not answer it.');
    expect(body.choices[0].message.content).toMatch(/^Echo: good morning\nThanks for asking\.\\nHere is what I found:Echo: good morning\n\\n---\\nAsked at .+\. Anything else\?$/);
    // As 4.8.10: the app's answer, not the detail of its nodes.
    expect(responseOf(body, 'legacyRunApp')?.textOutput).toMatch(/^\nThanks for asking\./);
    expect(responseOf(body, 'legacyRunApp')).not.toHaveProperty('pluginDetail');
  });

  it('the app node without a chosen app refuses clearly', async () => {
    const workflow = loadWorkflow('app-calls');
    workflow.nodes = workflow.nodes.filter((n) => n.nodeId !== 'translatorApp');
    workflow.edges = [{ source: '448745', target: 'legacyRunApp', sourceHandle: '448745-source-right', targetHandle: 'legacyRunApp-target-left' }];
    setInput(workflow, 'legacyRunApp', 'app', undefined);
    const appId = await importWorkflow(t, tok, 'Caller without app', workflow);
    const res = await completions({ appId, messages: [{ role: 'user', content: 'hi' }] });
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toBe("App not selected: node 'App call' got no value for 'app'");
  });
});

describe('missing inputs', () => {
  const start = loadWorkflow('fixed-opening-ending').nodes[1]!;
  const graphWith = (node: Record<string, unknown>) => ({
    nodes: [start, node],
    edges: [{ source: '448745', target: node.nodeId, sourceHandle: '448745-source-right', targetHandle: `${node.nodeId}-target-left` }],
  });
  const model = { key: 'model', renderTypeList: ['selectLLMModel', 'reference'], valueType: 'string', value: 'gpt-3.5-turbo' };
  const history = { key: 'history', renderTypeList: ['numberInput', 'reference'], valueType: 'chatHistory', value: 6 };
  const cases: [string, Record<string, unknown>, string][] = [
    [
      'question classification without a question',
      {
        nodeId: 'cq',
        name: 'Classifier',
        flowNodeType: 'classifyQuestion',
        inputs: [model, history, { key: 'userChatInput', renderTypeList: ['reference', 'textarea'], valueType: 'string', value: '' }, { key: 'agents', renderTypeList: ['custom'], valueType: 'any', value: [{ value: 'Greeting', key: 'wqre' }] }],
        outputs: [{ id: 'cqResult', key: 'cqResult', valueType: 'string', type: 'static' }],
      },
      "Input is empty: node 'Classifier' got no value for 'userChatInput'",
    ],
    [
      'content extraction without content',
      {
        nodeId: 'ext',
        name: 'Extractor',
        flowNodeType: 'contentExtract',
        inputs: [model, history, { key: 'content', renderTypeList: ['reference', 'textarea'], valueType: 'string', value: ['nowhere', 'nothing'] }, { key: 'extractKeys', renderTypeList: ['custom'], valueType: 'any', value: [{ key: 'a', desc: 'a', required: false }] }],
        outputs: [],
      },
      "Input is empty: node 'Extractor' got no value for 'content'",
    ],
    [
      'query extension without a question',
      { nodeId: 'cfr', name: 'Rewrite', flowNodeType: 'cfr', inputs: [model, history, { key: 'userChatInput', renderTypeList: ['reference', 'textarea'], valueType: 'string' }], outputs: [] },
      "Question is empty: node 'Rewrite' got no value for 'userChatInput'",
    ],
    [
      'HTTP request without a URL',
      { nodeId: 'h', name: 'Call', flowNodeType: 'httpRequest468', inputs: [{ key: 'system_httpReqUrl', renderTypeList: ['hidden'], valueType: 'string', value: '' }], outputs: [] },
      'Http url is empty',
    ],
  ];
  for (const [name, node, message] of cases) {
    it(`${name} is a 400 with the reference's message`, async () => {
      const before = fake.requests.length;
      const appId = await importWorkflow(t, tok, name, graphWith(node));
      const res = await completions({ appId, messages: [{ role: 'user', content: 'hello' }] });
      expect(res.statusCode).toBe(400);
      expect(res.json().message).toBe(message);
      expect(fake.requests.length).toBe(before);
    });
  }
});
