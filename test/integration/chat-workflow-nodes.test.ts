import { ObjectId } from 'mongodb';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { simpleFormToWorkflow } from '../../src/domain/workflow/simple-app.js';
import { formatChatTime } from '../../src/platform/chat/chat-time.js';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { ok } from './apps-helpers.js';
import { agentGraph as agentWithTools, chain, createPublishedApp, readFilesGraph, START_NODE, sseFrames, startChatApp } from './chat-helpers.js';

let t: TestApp;
let fake: FakeOpenAi;
let tok: string;
let service: Server;
let serviceUrl: string;
const received: unknown[] = [];

const completions = (payload: Record<string, unknown>) => t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: authHeaders(tok), payload });

beforeAll(async () => {
  ({ t, fake } = await startChatApp((f) => ({ SANDBOX_URL: f.origin })));
  await createUser(t, { username: 'builder', password: 'password-w1' });
  tok = await login(t, 'builder', 'password-w1');
  service = createServer((req, res) => {
    let text = '';
    req.on('data', (c) => {
      text += c;
    });
    req.on('end', () => {
      received.push({ url: req.url, method: req.method, body: text ? JSON.parse(text) : null });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ weather: { city: 'Oslo', temp: 3 }, answerText: 'Looked it up.' }));
    });
  });
  await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve));
  serviceUrl = `http://127.0.0.1:${(service.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
  await new Promise((resolve) => service?.close(resolve));
});

describe('workflow nodes through completions', () => {
  it('knowledge-base app: dataset search quotes reach the model prompt and the node responses', async () => {
    const datasetId = await ok(t, tok, 'POST', '/core/dataset/create', { name: 'Handbook' });
    const collectionId = await ok(t, tok, 'POST', '/core/dataset/collection/create', { datasetId, name: 'faq', type: 'virtual' });
    await ok(t, tok, 'POST', '/core/dataset/data/pushData', {
      collectionId,
      data: [
        { q: 'What is the office wifi password?', a: 'The wifi password is tulip-42.' },
        { q: 'When is lunch served?', a: 'Lunch is served at noon.' },
      ],
    });
    await t.app.datasets.trainingWorker.drain();
    const graph = simpleFormToWorkflow({ aiSettings: { model: 'fake-llm' }, dataset: { datasets: [{ datasetId }], searchMode: 'mixedRecall', similarity: 0 } });
    const appId = await createPublishedApp(t, tok, 'Handbook bot', { ...graph, chatConfig: {} });
    const res = await completions({ appId, detail: true, messages: [{ role: 'user', content: 'office wifi password' }] });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    const search = body.responseData.find((r: { moduleType: string }) => r.moduleType === 'datasetSearchNode');
    expect(search.quoteList[0]).toMatchObject({ q: 'What is the office wifi password?', datasetId, collectionId, sourceName: 'faq' });
    const prompt = (fake.requests.filter((r) => r.path === '/v1/chat/completions').at(-1)!.body as { messages: { content: string }[] }).messages.at(-1)!.content;
    expect(prompt).toContain('tulip-42');
    expect(prompt).toContain('office wifi password');
    // The AI node's context as the detail view shows it ends with its answer (as the reference).
    const ai = body.responseData.find((r: { moduleType: string }) => r.moduleType === 'chatNode');
    expect(ai.historyPreview.at(-1)).toEqual({ obj: 'AI', value: body.choices[0].message.content });
    expect(ai.historyPreview).toHaveLength(ai.contextTotalLen);
  });

  it('HTTP node calls the service with interpolated values and maps flattened outputs', async () => {
    const graph = {
      nodes: [
        { nodeId: 'start', flowNodeType: 'workflowStart', name: 'Start', inputs: [], outputs: [{ id: 'userChatInput', key: 'userChatInput' }] },
        {
          nodeId: 'http',
          flowNodeType: 'httpRequest468',
          name: 'Weather API',
          inputs: [
            { key: 'system_httpMethod', value: 'POST' },
            { key: 'system_httpReqUrl', value: `${serviceUrl}/weather` },
            { key: 'system_httpParams', value: [{ key: 'q', value: '{{city}}' }] },
            { key: 'system_httpJsonBody', value: '{"question":"{{$start.userChatInput$}}","chat":"{{chatId}}"}' },
            { key: 'system_httpContentType', value: 'json' },
          ],
          outputs: [
            { id: 'o1', key: 'weather.temp', type: 'dynamic', valueType: 'number' },
            { id: 'httpRawResponse', key: 'httpRawResponse', type: 'static' },
          ],
        },
        { nodeId: 'ans', flowNodeType: 'answerNode', name: 'Answer', inputs: [{ key: 'text', value: 'Temp is {{$http.o1$}}' }], outputs: [] },
      ],
      edges: [
        { source: 'start', sourceHandle: 'start-source-right', target: 'http', targetHandle: 'http-target-left' },
        { source: 'http', sourceHandle: 'http-source-right', target: 'ans', targetHandle: 'ans-target-left' },
      ],
      chatConfig: {},
    };
    const appId = await createPublishedApp(t, tok, 'HTTP bot', graph);
    const res = await completions({ appId, chatId: 'h1', variables: { city: 'Oslo' }, messages: [{ role: 'user', content: 'how cold "is" it' }] });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().choices[0].message.content).toBe('\nTemp is 3');
    expect(received.at(-1)).toEqual({ url: '/weather?q=Oslo', method: 'POST', body: { question: 'how cold "is" it', chat: 'h1' } });
  });

  it('HTTP JSON body: a reference standing bare is inserted as it is (JSON text from a node), a quoted one escaped', async () => {
    const graph = chain({
          nodeId: 'http',
          flowNodeType: 'httpRequest468',
          name: 'Poster',
          inputs: [
            { key: 'system_httpMethod', value: 'POST' },
            { key: 'system_httpReqUrl', value: `${serviceUrl}/json` },
            { key: 'system_addInputParam', renderTypeList: ['addInputParam'], value: {} },
            { key: 'extra', canEdit: true, valueType: 'string', value: '{"k":[1,2]}' },
            { key: 'system_httpJsonBody', value: '{"data": {{$start.userChatInput$}}, "text": "{{$start.userChatInput$}}", "extra": {{extra}}, "n": {{count}}, "say": "{{count}} \\"items\\""}' },
          ],
          outputs: [{ id: 'httpRawResponse', key: 'httpRawResponse', type: 'static' }],
    });
    const appId = await createPublishedApp(t, tok, 'JSON poster', graph);
    const question = '{"a": "b", "list": [1, "x"]}';
    const res = await completions({ appId, variables: { count: 3 }, messages: [{ role: 'user', content: question }] });
    expect(res.statusCode, res.body).toBe(200);
    expect(received.at(-1)).toEqual({ url: '/json', method: 'POST', body: { data: { a: 'b', list: [1, 'x'] }, text: question, extra: { k: [1, 2] }, n: 3, say: '3 "items"' } });
  });

  it('HTTP node without a chat: a JSON body leaves out a key that was only {{chatId}}, a null reads null, an unknown key stays as written', async () => {
    const httpNode = (contentType: string, body: string) => ({
      nodeId: 'http',
      flowNodeType: 'httpRequest468',
      name: 'Poster',
      inputs: [
        { key: 'system_httpMethod', value: 'POST' },
        { key: 'system_httpReqUrl', value: `${serviceUrl}/systemvars` },
        { key: 'system_httpParams', value: [{ key: 'nil', value: '{{nil}}' }] },
        { key: 'system_httpContentType', value: contentType },
        { key: 'system_addInputParam', renderTypeList: ['addInputParam'], value: {} },
        // A reference to an output nothing produced: a dynamic input without a value.
        { key: 'never', canEdit: true, valueType: 'string', value: ['nowhere', 'x'] },
        { key: 'system_httpJsonBody', value: body },
      ],
      outputs: [{ id: 'httpRawResponse', key: 'httpRawResponse', type: 'static' }],
    });
    const jsonBody = '{"chat": "{{chatId}}", "item": "{{responseChatItemId}}", "list": ["{{chatId}}", "{{never}}"], "note": "c-{{chatId}}", "nil": "{{nil}}", "bareNil": {{nil}}, "unknown": "{{notAKey}}"}';
    const appId = await createPublishedApp(t, tok, 'System variables poster', chain(httpNode('json', jsonBody)));
    const res = await completions({ appId, variables: { nil: null }, messages: [{ role: 'user', content: 'x', dataId: 'reply-item' }], responseChatItemId: 'reply-item' });
    expect(res.statusCode, res.body).toBe(200);
    expect(received.at(-1)).toEqual({
      url: '/systemvars?nil=null',
      method: 'POST',
      body: { item: 'reply-item', list: [null, null], note: 'c-null', nil: 'null', bareNil: null, unknown: '{{notAKey}}' },
    });
    // With a chat, its id is inserted.
    await completions({ appId, chatId: 'with-chat', variables: { nil: null }, messages: [{ role: 'user', content: 'x' }] });
    expect((received.at(-1) as { body: { chat?: string } }).body.chat).toBe('with-chat');
    // A raw-text body writes an undefined value as null.
    const rawId = await createPublishedApp(t, tok, 'Raw poster', chain(httpNode('raw-text', '{"chat": "{{chatId}}", "never": "{{never}}"}')));
    await completions({ appId: rawId, messages: [{ role: 'user', content: 'x' }] });
    expect((received.at(-1) as { body: unknown }).body).toEqual({ chat: 'null', never: 'null' });
  });

  it('a text without a chat keeps {{chatId}} as written (no value, as the reference), and inserts the id with one', async () => {
    const say = { nodeId: 'say', flowNodeType: 'answerNode', name: 'Say', inputs: [{ key: 'text', value: 'chat={{chatId}} app={{appId}}' }], outputs: [] };
    const appId = await createPublishedApp(t, tok, 'Chat id sayer', chain(say));
    const without = await completions({ appId, messages: [{ role: 'user', content: 'x' }] });
    expect(without.statusCode, without.body).toBe(200);
    expect((without.json().choices[0].message.content as string).trim()).toBe(`chat={{chatId}} app=${appId}`);
    const withChat = await completions({ appId, chatId: 'chat-for-text', messages: [{ role: 'user', content: 'x' }] });
    expect((withChat.json().choices[0].message.content as string).trim()).toBe(`chat=chat-for-text app=${appId}`);
  });

  it("HTTP node failures and a response's own error field fill the error output as the reference's client reports them", async () => {
    fake.route('GET', '/missing', () => ({ status: 404, json: { message: 'no such city' } }));
    fake.route('GET', '/soft-error', () => ({ json: { error: { code: 7 }, tool: 'picked' } }));
    try {
      const httpNode = (path: string) => ({
        nodeId: 'http',
        flowNodeType: 'httpRequest468',
        name: 'Caller',
        inputs: [
          { key: 'system_httpMethod', value: 'GET' },
          { key: 'system_httpReqUrl', value: `${fake.origin}${path}` },
        ],
        outputs: [
          { id: 'error', key: 'error', valueType: 'object' },
          { id: 'httpRawResponse', key: 'httpRawResponse', valueType: 'any' },
        ],
      });
      const graphFor = (path: string) =>
        chain(httpNode(path), { nodeId: 'say', flowNodeType: 'answerNode', name: 'Say', inputs: [{ key: 'text', value: '{{$http.httpRawResponse$}} | {{$http.error$}}' }], outputs: [] });
      const failing = await createPublishedApp(t, tok, 'Failing caller', graphFor('/missing'));
      const failed = await completions({ appId: failing, messages: [{ role: 'user', content: 'x' }] });
      expect(failed.statusCode, failed.body).toBe(200);
      const [raw, error] = (failed.json().choices[0].message.content as string).trim().split(' | ');
      expect(raw).toBe('no such city');
      expect(JSON.parse(error!)).toMatchObject({ message: 'Request failed with status code 404', name: 'AxiosError', code: 'ERR_BAD_REQUEST', status: 404, data: { message: 'no such city' } });

      const soft = await createPublishedApp(t, tok, 'Soft error caller', graphFor('/soft-error'));
      const answered = await completions({ appId: soft, messages: [{ role: 'user', content: 'x' }] });
      expect(answered.statusCode, answered.body).toBe(200);
      const [, softError] = (answered.json().choices[0].message.content as string).trim().split(' | ');
      expect(JSON.parse(softError!)).toEqual({ code: 7 });
    } finally {
      fake.unroute('GET', '/missing');
      fake.unroute('GET', '/soft-error');
    }
  });

  // MongoDB refuses a document over 100 levels: the node response holding a deep answer made the
  // turn's save fail there, logged and lost. FerretDB stores any depth, so here this guards the
  // round trip of the part kept as JSON text (the bound itself: workflow-messages' codec tests).
  it('HTTP node: a turn whose answer is nested 300 levels deep is saved, and read back whole', async () => {
    let deep: unknown = { temp: 3 };
    for (let i = 0; i < 300; i++) deep = { level: deep };
    fake.route('GET', '/deep', () => ({ json: deep as Record<string, unknown> }));
    try {
      const graph = chain({
        nodeId: 'http',
        flowNodeType: 'httpRequest468',
        name: 'Deep',
        inputs: [
          { key: 'system_httpMethod', value: 'GET' },
          { key: 'system_httpReqUrl', value: `${fake.origin}/deep` },
        ],
        outputs: [{ id: 'httpRawResponse', key: 'httpRawResponse', valueType: 'any' }],
      });
      const appId = await createPublishedApp(t, tok, 'Deep caller', graph);
      const res = await completions({ appId, chatId: 'deep-1', detail: true, messages: [{ role: 'user', content: 'x' }] });
      expect(res.statusCode, res.body).toBe(200);
      const { history } = await ok(t, tok, 'GET', '/core/chat/init', { appId, chatId: 'deep-1' });
      expect(history).toHaveLength(2);
      const resData = await ok(t, tok, 'GET', '/core/chat/getResData', { appId, chatId: 'deep-1', dataId: history[1].dataId });
      expect(resData.find((r: { moduleType: string }) => r.moduleType === 'httpRequest468').httpResult).toEqual(deep);
    } finally {
      fake.unroute('GET', '/deep');
    }
  });

  it('HTTP node: a DELETE sends no body, as the reference client (its values go in the query)', async () => {
    const graph = chain({
          nodeId: 'http',
          flowNodeType: 'httpRequest468',
          name: 'Remover',
          inputs: [
            { key: 'system_httpMethod', value: 'DELETE' },
            { key: 'system_httpReqUrl', value: `${serviceUrl}/items` },
            { key: 'system_httpParams', value: [{ key: 'id', value: '{{$start.userChatInput$}}' }] },
            { key: 'system_httpJsonBody', value: '{"id": "{{$start.userChatInput$}}"}' },
          ],
          outputs: [{ id: 'httpRawResponse', key: 'httpRawResponse', type: 'static' }],
    });
    const appId = await createPublishedApp(t, tok, 'Remover', graph);
    const res = await completions({ appId, detail: true, messages: [{ role: 'user', content: 'i-7' }] });
    expect(res.statusCode, res.body).toBe(200);
    expect(received.at(-1)).toEqual({ url: '/items?id=i-7', method: 'DELETE', body: null });
    const detail = res.json().responseData.find((r: { moduleType: string }) => r.moduleType === 'httpRequest468');
    expect(detail.params).toEqual({ id: 'i-7' });
    expect(detail.body).toBeUndefined();
  });

  it('a Laf node posts its inputs to the function and maps the reply', async () => {
    const graph = {
      nodes: [
        { nodeId: 'start', flowNodeType: 'workflowStart', name: 'Start', inputs: [], outputs: [{ id: 'userChatInput', key: 'userChatInput' }] },
        {
          nodeId: 'laf',
          flowNodeType: 'lafModule',
          name: 'Laf',
          inputs: [
            { key: 'system_httpReqUrl', value: `${serviceUrl}/laf` },
            { key: 'system_addInputParam', renderTypeList: ['addInputParam'], value: {} },
            { key: 'q', canEdit: true, value: ['start', 'userChatInput'] },
          ],
          outputs: [{ id: 'o', key: 'answerText', type: 'dynamic' }],
        },
      ],
      edges: [{ source: 'start', sourceHandle: 'start-source-right', target: 'laf', targetHandle: 'laf-target-left' }],
      chatConfig: {},
    };
    const appId = await createPublishedApp(t, tok, 'Laf bot', graph);
    const res = await completions({ appId, detail: true, messages: [{ role: 'user', content: 'ping' }] });
    expect(res.statusCode, res.body).toBe(200);
    expect(received.at(-1)).toMatchObject({ url: '/laf', method: 'POST', body: { q: 'ping', systemParams: { appId } } });
    // No chat, no chatId (the reference's undefined leaves the key out).
    expect((received.at(-1) as { body: { systemParams: object } }).body.systemParams).not.toHaveProperty('chatId');
    expect(res.json().responseData[1].httpResult).toMatchObject({ weather: { city: 'Oslo' } });
  });

  it('an unsupported node type is a clear 400, not a crash', async () => {
    const graph = {
      nodes: [
        { nodeId: 'start', flowNodeType: 'workflowStart', name: 'Start', inputs: [], outputs: [] },
        { nodeId: 'loop', flowNodeType: 'loop', name: 'Batch loop', inputs: [], outputs: [] },
      ],
      edges: [{ source: 'start', sourceHandle: 'start-source-right', target: 'loop', targetHandle: 'loop-target-left' }],
      chatConfig: {},
    };
    const appId = await createPublishedApp(t, tok, 'Loop bot', graph);
    const res = await completions({ appId, messages: [{ role: 'user', content: 'x' }] });
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toMatch(/'loop'.*Batch loop.*not supported/);
    const streamed = await completions({ appId, stream: true, messages: [{ role: 'user', content: 'x' }] });
    expect(streamed.statusCode).toBe(200);
    expect(streamed.body).toMatch(/event: error\ndata: .*not supported/);
  });

  it('a model error surfaces as an error frame in a stream', async () => {
    fake.route('POST', '/v1/chat/completions', () => ({ status: 500, json: { error: 'overloaded' } }));
    const appId = await createPublishedApp(t, tok, 'Plain bot', { ...simpleFormToWorkflow({ aiSettings: { model: 'fake-llm' } }), chatConfig: {} });
    const res = await completions({ appId, stream: true, detail: true, messages: [{ role: 'user', content: 'x' }] });
    expect(res.body).toMatch(/event: error\ndata: .*HTTP 500/);
    const plain = await completions({ appId, messages: [{ role: 'user', content: 'x' }] });
    expect(plain.statusCode).toBe(502);
    expect(plain.json().message).toMatch(/HTTP 500.*overloaded/);
    fake.unroute('POST', '/v1/chat/completions');
  });
});

describe('apps inside apps', () => {
  const greeterPlugin = {
    nodes: [
      {
        nodeId: 'pin',
        flowNodeType: 'pluginInput',
        name: 'Inputs',
        inputs: [{ key: 'who', valueType: 'string', renderTypeList: ['input'], required: true, defaultValue: 'world' }],
        outputs: [{ id: 'who', key: 'who', valueType: 'string' }],
      },
      {
        nodeId: 'fmt',
        flowNodeType: 'textEditor',
        name: 'Format',
        inputs: [
          { key: 'system_addInputParam', renderTypeList: ['addInputParam'], value: {} },
          { key: 'name', canEdit: true, value: ['pin', 'who'], valueType: 'string' },
          { key: 'system_textareaInput', value: 'Hello, {{name}}!' },
        ],
        outputs: [{ id: 'system_text', key: 'system_text', valueType: 'string' }],
      },
      { nodeId: 'pout', flowNodeType: 'pluginOutput', name: 'Outputs', inputs: [{ key: 'greeting', valueType: 'string', value: ['fmt', 'system_text'] }], outputs: [] },
    ],
    edges: [
      { source: 'pin', sourceHandle: 'pin-source-right', target: 'fmt', targetHandle: 'fmt-target-left' },
      { source: 'fmt', sourceHandle: 'fmt-source-right', target: 'pout', targetHandle: 'pout-target-left' },
    ],
    chatConfig: {},
  };

  it('a plugin app runs through completions with variables as inputs and reports its output', async () => {
    const pluginId = await createPublishedApp(t, tok, 'Greeter', greeterPlugin, 'plugin');
    const res = await completions({ appId: pluginId, chatId: 'plugin-run', variables: { who: 'Ada' } });
    expect(res.statusCode, res.body).toBe(200);
    const output = res.json().responseData.find((r: { moduleType: string }) => r.moduleType === 'pluginOutput');
    expect(output.pluginOutput).toEqual({ greeting: 'Hello, Ada!' });
    // A plugin run has no question: its chat is titled with the time, as the reference writes it.
    const chat = await t.app.mongo.db.collection('chats').findOne({ chatId: 'plugin-run' });
    expect(chat?.title).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} [A-Z][a-z]+day$/);
  });

  it("a plugin's own answer (an answer node inside it) streams and is saved as the plugin node's answer", async () => {
    const answering = {
      nodes: [
        { nodeId: 'pin', flowNodeType: 'pluginInput', name: 'Inputs', inputs: [{ key: 'who', valueType: 'string', required: true }], outputs: [{ id: 'who', key: 'who', valueType: 'string' }] },
        { nodeId: 'hi', flowNodeType: 'answerNode', name: 'Hi', inputs: [{ key: 'text', value: 'hi {{$pin.who$}}' }], outputs: [] },
        { nodeId: 'pout', flowNodeType: 'pluginOutput', name: 'Outputs', inputs: [{ key: 'done', valueType: 'boolean', value: true }], outputs: [] },
      ],
      edges: [
        { source: 'pin', sourceHandle: 'pin-source-right', target: 'hi', targetHandle: 'hi-target-left' },
        { source: 'hi', sourceHandle: 'hi-source-right', target: 'pout', targetHandle: 'pout-target-left' },
      ],
      chatConfig: {},
    };
    const pluginId = await createPublishedApp(t, tok, 'Greeting plugin', answering, 'plugin');
    const parentId = await createPublishedApp(t, tok, 'Uses a plugin', {
      nodes: [
        { nodeId: 'start', flowNodeType: 'workflowStart', name: 'Start', inputs: [], outputs: [{ id: 'userChatInput', key: 'userChatInput' }] },
        { nodeId: 'plug', flowNodeType: 'pluginModule', name: 'Greeting', pluginId, inputs: [{ key: 'who', valueType: 'string', value: ['start', 'userChatInput'] }], outputs: [{ id: 'done', key: 'done' }] },
      ],
      edges: [{ source: 'start', sourceHandle: 'start-source-right', target: 'plug', targetHandle: 'plug-target-left' }],
      chatConfig: {},
    });
    const plain = await completions({ appId: parentId, chatId: 'plugin-answer', messages: [{ role: 'user', content: 'Cy' }] });
    expect(plain.statusCode, plain.body).toBe(200);
    expect(plain.json().choices[0].message.content).toBe('\nhi Cy');
    const streamed = await completions({ appId: parentId, stream: true, messages: [{ role: 'user', content: 'Di' }] });
    const text = sseFrames(streamed.body)
      .filter((f) => (f.event === 'answer' || f.event === 'fastAnswer' || f.event === undefined) && f.data !== '[DONE]')
      .map((f) => JSON.parse(f.data).choices?.[0]?.delta?.content ?? '')
      .join('');
    expect(text).toBe('\nhi Di');
    const init = await ok(t, tok, 'GET', '/core/chat/init', { appId: parentId, chatId: 'plugin-answer' });
    expect(init.history[1].value).toEqual([{ type: 'text', text: { content: '\nhi Cy' } }]);
  });

  it('a plugin whose output node is skipped reports no output: no pluginOutput response, none on its node, and its answer is not kept', async () => {
    const gated = {
      nodes: [
        { nodeId: 'pin', flowNodeType: 'pluginInput', name: 'Inputs', inputs: [{ key: 'who', valueType: 'string', required: true }], outputs: [{ id: 'who', key: 'who', valueType: 'string' }] },
        {
          nodeId: 'gate',
          flowNodeType: 'ifElseNode',
          name: 'Gate',
          inputs: [{ key: 'ifElseList', value: [{ condition: 'AND', list: [{ variable: ['pin', 'who'], condition: 'equalTo', value: 'open' }] }] }],
          outputs: [{ id: 'ifElseResult', key: 'ifElseResult' }],
        },
        { nodeId: 'hi', flowNodeType: 'answerNode', name: 'Hi', inputs: [{ key: 'text', value: 'hi {{$pin.who$}}' }], outputs: [] },
        { nodeId: 'pout', flowNodeType: 'pluginOutput', name: 'Outputs', inputs: [{ key: 'who', valueType: 'string', value: ['pin', 'who'] }], outputs: [] },
      ],
      edges: [
        { source: 'pin', sourceHandle: 'pin-source-right', target: 'hi', targetHandle: 'hi-target-left' },
        { source: 'pin', sourceHandle: 'pin-source-right', target: 'gate', targetHandle: 'gate-target-left' },
        { source: 'gate', sourceHandle: 'gate-source-IF', target: 'pout', targetHandle: 'pout-target-left' },
      ],
      chatConfig: {},
    };
    const pluginId = await createPublishedApp(t, tok, 'Gated plugin', gated, 'plugin');
    const direct = await completions({ appId: pluginId, detail: true, variables: { who: 'closed' } });
    expect(direct.statusCode, direct.body).toBe(200);
    expect(direct.json().responseData.map((r: { moduleType: string }) => r.moduleType)).not.toContain('pluginOutput');

    const parentId = await createPublishedApp(t, tok, 'Uses a gated plugin', {
      nodes: [
        START_NODE,
        { nodeId: 'plug', flowNodeType: 'pluginModule', name: 'Gated', pluginId, inputs: [{ key: 'who', valueType: 'string', value: ['start', 'userChatInput'] }], outputs: [{ id: 'who', key: 'who' }] },
      ],
      edges: [{ source: 'start', sourceHandle: 'start-source-right', target: 'plug', targetHandle: 'plug-target-left' }],
      chatConfig: {},
    });
    const closed = await completions({ appId: parentId, detail: true, messages: [{ role: 'user', content: 'closed' }] });
    expect(closed.statusCode, closed.body).toBe(200);
    const plug = closed.json().responseData.find((r: { nodeId: string }) => r.nodeId === 'plug');
    expect(plug).toBeDefined();
    expect(plug).not.toHaveProperty('pluginOutput');
    expect(closed.json().choices[0].message.content).toBe('');
    const open = await completions({ appId: parentId, detail: true, messages: [{ role: 'user', content: 'open' }] });
    expect(open.json().responseData.find((r: { nodeId: string }) => r.nodeId === 'plug').pluginOutput).toEqual({ who: 'open' });
    expect(open.json().choices[0].message.content).toBe('\nhi open');
  });

  it('a debug step of a plugin node shows what ran inside the plugin (its output node apart); a chat turn does not', async () => {
    const pluginId = await createPublishedApp(t, tok, 'Greeter for debug', greeterPlugin, 'plugin');
    const plug = { nodeId: 'plug', flowNodeType: 'pluginModule', name: 'Greeting', pluginId, isEntry: true, inputs: [{ key: 'who', valueType: 'string', value: 'Ada' }], outputs: [{ id: 'greeting', key: 'greeting' }] };
    const debug = await ok(t, tok, 'POST', '/core/workflow/debug', { appId: pluginId, nodes: [plug], edges: [], variables: {} });
    const detail = debug.flowResponses[0].pluginDetail as { moduleType: string }[];
    expect(detail.length).toBeGreaterThan(0);
    expect(detail.map((r) => r.moduleType)).not.toContain('pluginOutput');
    expect(debug.flowResponses[0].pluginOutput).toEqual({ greeting: 'Hello, Ada!' });
  });

  it('pluginModule and appModule nodes run other apps of the team', async () => {
    const pluginId = await createPublishedApp(t, tok, 'Greeter 2', greeterPlugin, 'plugin');
    const childId = await createPublishedApp(t, tok, 'Child', {
      nodes: [
        { nodeId: 'start', flowNodeType: 'workflowStart', name: 'Start', inputs: [], outputs: [{ id: 'userChatInput', key: 'userChatInput' }] },
        { nodeId: 'a', flowNodeType: 'answerNode', name: 'A', inputs: [{ key: 'text', value: 'child heard {{$start.userChatInput$}}' }], outputs: [] },
      ],
      edges: [{ source: 'start', sourceHandle: 'start-source-right', target: 'a', targetHandle: 'a-target-left' }],
      chatConfig: {},
    });
    const parent = {
      nodes: [
        { nodeId: 'start', flowNodeType: 'workflowStart', name: 'Start', inputs: [], outputs: [{ id: 'userChatInput', key: 'userChatInput' }] },
        {
          nodeId: 'plug',
          flowNodeType: 'pluginModule',
          name: 'Greeter',
          pluginId,
          inputs: [{ key: 'who', valueType: 'string', value: ['start', 'userChatInput'] }],
          outputs: [{ id: 'greeting', key: 'greeting', valueType: 'string' }],
        },
        { nodeId: 'say', flowNodeType: 'answerNode', name: 'Say', inputs: [{ key: 'text', value: '{{$plug.greeting$}}' }], outputs: [] },
        {
          nodeId: 'child',
          flowNodeType: 'appModule',
          name: 'Child app',
          pluginId: childId,
          inputs: [{ key: 'userChatInput', value: ['start', 'userChatInput'] }, { key: 'history', value: 0 }],
          outputs: [{ id: 'answerText', key: 'answerText' }],
        },
      ],
      edges: [
        { source: 'start', sourceHandle: 'start-source-right', target: 'plug', targetHandle: 'plug-target-left' },
        { source: 'plug', sourceHandle: 'plug-source-right', target: 'say', targetHandle: 'say-target-left' },
        { source: 'say', sourceHandle: 'say-source-right', target: 'child', targetHandle: 'child-target-left' },
      ],
      chatConfig: {},
    };
    const parentId = await createPublishedApp(t, tok, 'Parent', parent);
    const res = await completions({ appId: parentId, messages: [{ role: 'user', content: 'Bo' }] });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().choices[0].message.content).toBe('\nHello, Bo!\nchild heard Bo');

    await createUser(t, { username: 'stranger', password: 'password-s9' });
    const strangerTok = await login(t, 'stranger', 'password-s9');
    // Another team cannot even save a graph naming these apps (a saved graph names only what its saver can read).
    const refused = await t.app.inject({
      method: 'POST',
      url: '/api/core/app/create',
      headers: authHeaders(strangerTok),
      payload: { name: 'Thief', type: 'advanced', modules: parent.nodes, edges: parent.edges },
    });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().statusText).toBe('unAuthApp');
  });
});

describe('system variables', () => {
  it("cTime is the time in the caller's time zone (Asia/Shanghai by default), with the weekday", async () => {
    const graph = chain({ nodeId: 'say', flowNodeType: 'answerNode', name: 'Say', inputs: [{ key: 'text', value: '{{cTime}}' }], outputs: [] });
    const appId = await createPublishedApp(t, tok, 'Clock', graph);
    await createUser(t, { username: 'new-yorker', password: 'password-ny1' });
    const nyToken = await login(t, 'new-yorker', 'password-ny1');
    await ok(t, nyToken, 'POST', '/support/user/account/update', { timezone: 'America/New_York' });
    const nyAppId = await createPublishedApp(t, await login(t, 'new-yorker', 'password-ny1'), 'Clock', graph);

    const timeIn = async (token: string, id: string, zone: string) => {
      const before = Date.now();
      const res = await t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: authHeaders(token), payload: { appId: id, messages: [{ role: 'user', content: 'now?' }] } });
      const seconds: string[] = [];
      for (let at = Math.floor(before / 1000) * 1000; at <= Date.now(); at += 1000) seconds.push(formatChatTime(new Date(at), zone));
      expect(res.statusCode, res.body).toBe(200);
      const said = (res.json().choices[0].message.content as string).trim();
      expect(seconds).toContain(said);
      return said;
    };
    expect(await timeIn(tok, appId, 'Asia/Shanghai')).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} [A-Z][a-z]+day$/);
    await timeIn(await login(t, 'new-yorker', 'password-ny1'), nyAppId, 'America/New_York');
  });
});

describe('nested apps', () => {
  it('an app that calls itself ten times a level stops at the turn budget of node runs', async () => {
    const appId = (await ok(t, tok, 'POST', '/core/app/create', { name: 'Fan-out', type: 'advanced', modules: [], edges: [] })) as string;
    const start = { nodeId: 'start', flowNodeType: 'workflowStart', name: 'Start', inputs: [], outputs: [{ id: 'userChatInput', key: 'userChatInput' }] };
    const say = { nodeId: 'say', flowNodeType: 'answerNode', name: 'Say', inputs: [{ key: 'text', value: 'x' }], outputs: [] };
    const calls = Array.from({ length: 10 }, (_, i) => ({
      nodeId: `self${i}`,
      flowNodeType: 'appModule',
      name: `Self ${i}`,
      pluginId: appId,
      inputs: [{ key: 'userChatInput', value: ['start', 'userChatInput'] }, { key: 'history', value: 0 }],
      outputs: [{ id: 'answerText', key: 'answerText' }],
    }));
    const edges = [say, ...calls].map((node) => ({ source: 'start', sourceHandle: 'start-source-right', target: node.nodeId, targetHandle: `${node.nodeId}-target-left` }));
    await ok(t, tok, 'POST', `/core/app/version/publish?appId=${appId}`, { nodes: [start, say, ...calls], edges, chatConfig: {}, isPublish: true, versionName: 'v1' });

    const res = await completions({ appId, messages: [{ role: 'user', content: 'go' }] });
    expect(res.statusCode, res.body).toBe(200);
    // Every level answers "x": one per answer node run, all levels together within the turn's 200 runs.
    const said = (res.json().choices[0].message.content as string).split('x').length - 1;
    expect(said).toBeGreaterThan(10);
    expect(said).toBeLessThan(200);
  });
});

describe('tools node', () => {
  /** start → agent (showing its status), with `tools` attached as its tools and `after` run once it answers. */
  const agentGraph = (tools: Record<string, unknown>[], after: Record<string, unknown>[] = []) => agentWithTools(tools, { after, showStatus: true });
  const weatherTool = () => ({
    nodeId: 'weather',
    flowNodeType: 'httpRequest468',
    name: 'Weather',
    intro: 'Looks up the weather of a city',
    inputs: [
      { key: 'city', valueType: 'string', toolDescription: 'the city', required: true, canEdit: true },
      { key: 'system_addInputParam', renderTypeList: ['addInputParam'], value: {} },
      { key: 'system_httpMethod', value: 'GET' },
      { key: 'system_httpReqUrl', value: `${serviceUrl}/weather?city={{city}}` },
    ],
    outputs: [{ id: 'httpRawResponse', key: 'httpRawResponse', valueType: 'any' }],
  });

  it('offers attached nodes as functions, runs the called one and answers with its result', async () => {
    const graph = agentGraph([weatherTool()]);
    const appId = await createPublishedApp(t, tok, 'Agent bot', graph);
    const res = await completions({ appId, stream: true, detail: true, messages: [{ role: 'user', content: 'Bergen' }] });
    expect(res.statusCode).toBe(200);
    expect(res.body).toMatch(/event: toolCall\ndata: .*"functionName":"weather"/);
    expect(res.body).toMatch(/event: toolResponse/);
    expect(received.at(-1)).toMatchObject({ url: '/weather?city=Bergen', method: 'GET' });
    const offered = fake.requests.filter((r) => r.path === '/v1/chat/completions').at(-2)!.body as { tools: { function: { name: string; description: string } }[] };
    expect(offered.tools[0]!.function).toMatchObject({ name: 'weather', description: 'Looks up the weather of a city' });
    const plain = (await completions({ appId, detail: true, messages: [{ role: 'user', content: 'Oslo' }] })).json();
    const content = plain.choices[0].message.content;
    expect(content[0]).toMatchObject({ type: 'tool', tools: [{ functionName: 'weather', params: '{"city":"Oslo"}' }] });
    expect(content[1].text.content).toMatch(/^Tool said: .*Oslo/s);
  });

  it('text the model writes beside its tool calls is part of the answer and of answerText', async () => {
    fake.route('POST', '/v1/chat/completions', (seen) => {
      const messages = (seen.body as { messages: { role: string }[] }).messages;
      if (!messages.some((m) => m.role === 'tool')) {
        const call = { id: 'call_9', type: 'function', function: { name: 'weather', arguments: '{"city":"Bodo"}' } };
        return { json: { choices: [{ message: { role: 'assistant', content: 'Let me check. ', tool_calls: [call] } }], usage: { prompt_tokens: 10, completion_tokens: 5 } } };
      }
      return { json: { choices: [{ message: { role: 'assistant', content: 'It is mild.' } }], usage: { prompt_tokens: 10, completion_tokens: 5 } } };
    });
    try {
      const graph = agentGraph([weatherTool()], [{ nodeId: 'after', flowNodeType: 'answerNode', name: 'After', inputs: [{ key: 'text', value: 'said: {{$agent.answerText$}}' }], outputs: [] }]);
      const appId = await createPublishedApp(t, tok, 'Talking agent', graph);
      const res = await completions({ appId, detail: true, messages: [{ role: 'user', content: 'Bodo' }] });
      expect(res.statusCode, res.body).toBe(200);
      const content = res.json().choices[0].message.content as { type: string; text?: { content: string } }[];
      expect(content.map((value) => value.type)).toEqual(['text', 'tool', 'text']);
      expect(content[0]!.text!.content).toBe('Let me check. ');
      expect(content[2]!.text!.content).toBe('It is mild.\nsaid: Let me check. It is mild.');
      const streamed = await completions({ appId, stream: true, detail: true, messages: [{ role: 'user', content: 'Bodo' }] });
      const answers = sseFrames(streamed.body).filter((frame) => frame.event === 'answer').map((frame) => frame.data);
      expect(answers.some((data) => data.includes('Let me check.'))).toBe(true);
    } finally {
      fake.unroute('POST', '/v1/chat/completions');
    }
  });

  it('streams a tool-calling round as the model writes it: answer tokens, the call, its argument pieces, then the next round', async () => {
    const sse = (chunks: unknown[]) => async (res: import('node:http').ServerResponse) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const chunk of chunks) res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      res.end('data: [DONE]\n\n');
    };
    const delta = (d: unknown) => ({ choices: [{ index: 0, delta: d }] });
    fake.route('POST', '/v1/chat/completions', (seen) => {
      const messages = (seen.body as { messages: { role: string }[] }).messages;
      if (!messages.some((m) => m.role === 'tool')) {
        return {
          stream: sse([
            delta({ role: 'assistant', content: 'Let me ' }),
            delta({ content: 'check. ' }),
            delta({ tool_calls: [{ index: 0, id: 'call_s', type: 'function', function: { name: 'weather', arguments: '' } }] }),
            delta({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
            delta({ tool_calls: [{ index: 0, function: { arguments: '"Molde"}' } }] }),
            { choices: [], usage: { prompt_tokens: 10, completion_tokens: 5 } },
          ]),
        };
      }
      return { stream: sse([delta({ content: 'It is ' }), delta({ content: 'cold.' })]) };
    });
    try {
      const appId = await createPublishedApp(t, tok, 'Streaming agent', agentGraph([weatherTool()]));
      const res = await completions({ appId, stream: true, detail: true, chatId: 'agent-stream', messages: [{ role: 'user', content: 'Molde' }] });
      expect(res.statusCode, res.body).toBe(200);
      const frames = sseFrames(res.body).filter((f) => f.data !== '[DONE]' && f.event !== 'flowResponses');
      const seen = frames.map((f) => {
        const data = JSON.parse(f.data);
        if (f.event === 'answer' || f.event === 'fastAnswer') return `${f.event}:${data.choices[0].delta.content ?? ''}`;
        if (f.event === 'toolCall') return `toolCall:${data.tool.id}:${data.tool.functionName}:${data.tool.params}`;
        if (f.event === 'toolParams') return `toolParams:${data.tool.id}:${data.tool.params}`;
        if (f.event === 'toolResponse') return `toolResponse:${data.tool.id}`;
        return `${f.event}:${data.name ?? ''}`;
      });
      expect(seen.filter((line) => line !== 'answer:')).toEqual([
        'flowNodeStatus:Agent',
        'answer:Let me ',
        'answer:check. ',
        'toolCall:call_s:weather:',
        'toolParams:call_s:{"city":',
        'toolParams:call_s:"Molde"}',
        // The tool (an HTTP node) answers on its own too: its response's answerText.
        'fastAnswer:Looked it up.',
        'toolResponse:call_s',
        'flowNodeStatus:Agent',
        'answer:It is ',
        'answer:cold.',
      ]);
      expect(received.at(-1)).toMatchObject({ url: '/weather?city=Molde', method: 'GET' });
      const init = await ok(t, tok, 'GET', '/core/chat/init', { appId, chatId: 'agent-stream' });
      const saved = init.history[1].value as { type: string; text?: { content: string }; tools?: { params: string }[] }[];
      expect(saved.map((value) => value.type)).toEqual(['text', 'tool', 'text']);
      expect(saved[1]!.tools![0]!.params).toBe('{"city":"Molde"}');
      expect(saved[2]!.text!.content).toBe('It is cold.');
    } finally {
      fake.unroute('POST', '/v1/chat/completions');
    }
  });

  it("what a called tool's own nodes answer streams as they answer it and is part of the agent's answer, before the tool item", async () => {
    const writerTool = {
      nodeId: 'writer',
      flowNodeType: 'chatNode',
      name: 'Writer',
      intro: 'Writes a short text about a topic',
      showStatus: true,
      inputs: [
        { key: 'model', value: 'fake-llm' },
        { key: 'userChatInput', valueType: 'string', toolDescription: 'the topic', required: true },
      ],
      outputs: [{ id: 'answerText', key: 'answerText' }],
    };
    const appId = await createPublishedApp(t, tok, 'Writing agent', agentGraph([writerTool]));
    const res = await completions({ appId, stream: true, detail: true, chatId: 'agent-writer', messages: [{ role: 'user', content: 'waves' }] });
    expect(res.statusCode, res.body).toBe(200);
    const frames = sseFrames(res.body).filter((f) => f.data !== '[DONE]');
    const writerText = fake.reply([{ role: 'user', content: 'waves' }]);
    const before = frames.slice(0, frames.findIndex((f) => f.event === 'toolResponse'));
    const streamedByTool = before.filter((f) => f.event === 'answer').map((f) => JSON.parse(f.data).choices[0].delta.content ?? '').join('');
    expect(streamedByTool).toBe(writerText);
    // As a tool, the writer shows no status of its own.
    expect(frames.filter((f) => f.event === 'flowNodeStatus').map((f) => JSON.parse(f.data).name)).not.toContain('Writer');
    const init = await ok(t, tok, 'GET', '/core/chat/init', { appId, chatId: 'agent-writer' });
    const saved = init.history[1].value as { type: string; text?: { content: string } }[];
    expect(saved.map((value) => value.type)).toEqual(['text', 'tool', 'text']);
    expect(saved[0]!.text!.content).toBe(writerText);
  });

  it('an HTTP tool with declared outputs answers the model with the values it picked', async () => {
    const picking = { ...weatherTool(), outputs: [{ id: 'temp', key: 'weather.temp', valueType: 'number', type: 'dynamic' }, { id: 'httpRawResponse', key: 'httpRawResponse', valueType: 'any' }] };
    const appId = await createPublishedApp(t, tok, 'Picking agent', agentGraph([picking]));
    const res = await completions({ appId, messages: [{ role: 'user', content: 'Oslo' }] });
    expect(res.statusCode, res.body).toBe(200);
    const toolMessage = (fake.requests.filter((r) => r.path === '/v1/chat/completions').at(-1)!.body as { messages: { role: string; content: string }[] }).messages.find((m) => m.role === 'tool');
    expect(JSON.parse(toolMessage!.content)).toEqual({ 'weather.temp': 3 });
  });

  it('a node after the agent reads what a called tool produced', async () => {
    const graph = agentGraph([weatherTool()], [{ nodeId: 'after', flowNodeType: 'answerNode', name: 'After', inputs: [{ key: 'text', value: 'raw: {{$weather.httpRawResponse$}}' }], outputs: [] }]);
    const appId = await createPublishedApp(t, tok, 'Agent then answer', graph);
    const res = await completions({ appId, detail: true, messages: [{ role: 'user', content: 'Tromso' }] });
    expect(res.statusCode, res.body).toBe(200);
    const after = res.json().responseData.find((r: { nodeId: string }) => r.nodeId === 'after');
    expect(after.textOutput).toContain('Oslo');
  });

  it("bills what the called tools used with the agent's own call, and shows the agent's conversation", async () => {
    const writerTool = {
      nodeId: 'writer',
      flowNodeType: 'chatNode',
      name: 'Writer',
      intro: 'Writes a short text about a topic',
      inputs: [
        { key: 'model', value: 'fake-llm' },
        { key: 'userChatInput', valueType: 'string', toolDescription: 'the topic', required: true },
      ],
      outputs: [{ id: 'answerText', key: 'answerText' }],
    };
    const graph = agentGraph([writerTool]);
    const appId = await createPublishedApp(t, tok, 'Writer agent', graph);
    await t.app.identity.usage.drain();
    const res = await completions({ appId, detail: true, messages: [{ role: 'user', content: 'tides' }] });
    expect(res.statusCode, res.body).toBe(200);
    const agent = res.json().responseData.find((r: { moduleType: string }) => r.moduleType === 'tools');
    const writer = agent.toolDetail.find((r: { moduleType: string }) => r.moduleType === 'chatNode');
    expect(writer.totalPoints).toBeGreaterThan(0);
    expect(agent.totalPoints).toBeCloseTo(writer.totalPoints + (100 * agent.toolCallTokens) / 1000, 6);
    // The conversation the agent had: the question first, its final answer last.
    expect(agent.historyPreview[0]).toEqual({ obj: 'Human', value: 'tides' });
    expect(agent.historyPreview.at(-1)).toMatchObject({ obj: 'AI' });
    expect(agent.historyPreview.some((m: { value: string }) => m.value.includes('Echo: tides'))).toBe(true);

    await t.app.identity.usage.drain();
    const record = await t.app.mongo.db.collection('usages').findOne({ appId: new ObjectId(appId) });
    expect(record?.list.map((line: { moduleName: string }) => line.moduleName)).toEqual(['Agent', 'Writer']);
    expect(record?.totalPoints).toBeCloseTo(agent.totalPoints, 6);
  });
});

describe('code, readFiles and customFeedback nodes', () => {
  it('runs code in the sandbox, reads attached files and saves custom feedback on the answer', async () => {
    fake.route('POST', '/sandbox/js', (r) => {
      const { variables } = r.body as { variables: { a: number; b: number } };
      return { json: { success: true, data: { codeReturn: { sum: variables.a + variables.b }, log: 'ok' } } };
    });
    fake.route('GET', '/files/notes.txt', () => ({ text: 'The secret number is 7.' }));
    const graph = {
      nodes: [
        { nodeId: 'start', flowNodeType: 'workflowStart', name: 'Start', inputs: [], outputs: [{ id: 'userFiles', key: 'userFiles' }] },
        {
          nodeId: 'code',
          flowNodeType: 'code',
          name: 'Add',
          inputs: [
            { key: 'system_addInputParam', renderTypeList: ['addInputParam'], value: {} },
            { key: 'a', canEdit: true, value: 2, valueType: 'number' },
            { key: 'b', canEdit: true, value: 3, valueType: 'number' },
            { key: 'codeType', value: 'js' },
            { key: 'code', value: 'function main({a, b}) { return { sum: a + b } }' },
          ],
          outputs: [{ id: 'sum', key: 'sum', type: 'dynamic', valueType: 'number' }],
        },
        { nodeId: 'files', flowNodeType: 'readFiles', name: 'Read', inputs: [{ key: 'fileUrlList', value: ['start', 'userFiles'], valueType: 'arrayString' }], outputs: [{ id: 'system_text', key: 'system_text' }] },
        { nodeId: 'ans', flowNodeType: 'answerNode', name: 'Answer', inputs: [{ key: 'text', value: 'sum={{$code.sum$}} | {{$files.system_text$}}' }], outputs: [] },
        { nodeId: 'fb', flowNodeType: 'customFeedback', name: 'Flag', inputs: [{ key: 'system_textareaInput', value: 'needs review' }], outputs: [] },
      ],
      edges: [
        { source: 'start', sourceHandle: 'start-source-right', target: 'code', targetHandle: 'code-target-left' },
        { source: 'code', sourceHandle: 'code-source-right', target: 'files', targetHandle: 'files-target-left' },
        { source: 'files', sourceHandle: 'files-source-right', target: 'ans', targetHandle: 'ans-target-left' },
        { source: 'ans', sourceHandle: 'ans-source-right', target: 'fb', targetHandle: 'fb-target-left' },
      ],
      chatConfig: {},
    };
    const appId = await createPublishedApp(t, tok, 'Tools bot', graph);
    const res = await completions({
      appId,
      chatId: 'x1',
      responseChatItemId: 'ans1',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'read it' }, { type: 'file_url', name: 'notes.txt', url: `${fake.origin}/files/notes.txt` }] }],
    });
    expect(res.statusCode, res.body).toBe(200);
    const content = res.json().choices[0].message.content as string;
    expect(content).toContain('sum=5');
    expect(content).toContain('The secret number is 7.');
    const init = await ok(t, tok, 'GET', '/core/chat/init', { appId, chatId: 'x1', loadCustomFeedbacks: true });
    expect(init.history[1].customFeedbacks).toEqual(['needs review']);
    expect(init.history[0].value[1]).toMatchObject({ type: 'file', file: { type: 'file', name: 'notes.txt' } });
    await ok(t, tok, 'POST', '/core/chat/feedback/closeCustom', { appId, chatId: 'x1', chatItemId: 'ans1', index: 0 });
    const after = await ok(t, tok, 'GET', '/core/chat/init', { appId, chatId: 'x1', loadCustomFeedbacks: true });
    expect(after.history[1].customFeedbacks).toEqual([]);
  });

  it("a failing sandbox gives the code node's error output as the reference's error object (what a following node shows)", async () => {
    fake.route('POST', '/sandbox/js', () => ({ json: { success: false, message: 'main is not defined' } }));
    const graph = {
      nodes: [
        { nodeId: 'start', flowNodeType: 'workflowStart', name: 'Start', inputs: [], outputs: [] },
        {
          nodeId: 'code',
          flowNodeType: 'code',
          name: 'Broken',
          inputs: [
            { key: 'system_addInputParam', renderTypeList: ['addInputParam'], value: {} },
            { key: 'codeType', value: 'js' },
            { key: 'code', value: 'oops' },
          ],
          outputs: [{ id: 'error', key: 'error', valueType: 'object' }],
        },
        { nodeId: 'ans', flowNodeType: 'answerNode', name: 'Answer', inputs: [{ key: 'text', value: 'failed: {{$code.error$}}' }], outputs: [] },
      ],
      edges: [
        { source: 'start', sourceHandle: 'start-source-right', target: 'code', targetHandle: 'code-target-left' },
        { source: 'code', sourceHandle: 'code-source-right', target: 'ans', targetHandle: 'ans-target-left' },
      ],
      chatConfig: {},
    };
    const appId = await createPublishedApp(t, tok, 'Broken code', graph);
    const res = await completions({ appId, messages: [{ role: 'user', content: 'go' }] });
    expect(res.statusCode, res.body).toBe(200);
    const shown = (res.json().choices[0].message.content as string).replace(/^\nfailed: /, '');
    expect(JSON.parse(shown)).toEqual({ message: 'Run code failed', name: 'Error', method: 'post', data: { success: false, message: 'main is not defined' } });

    // A sandbox that fails with an error status is reported as the reference's HTTP client reports it.
    fake.route('POST', '/sandbox/js', () => ({ status: 500, json: { success: false, message: 'crashed' } }));
    const crashed = await completions({ appId, messages: [{ role: 'user', content: 'go' }] });
    const error = JSON.parse((crashed.json().choices[0].message.content as string).replace(/^\nfailed: /, ''));
    expect(error).toMatchObject({ message: 'Request failed with status code 500', name: 'AxiosError', code: 'ERR_BAD_RESPONSE', status: 500, data: { message: 'crashed' } });
  });

  it('readFiles reads a chat upload by its relative link, as the web client sends it', async () => {
    const boundary = '----upload';
    const form = [
      `--${boundary}\r\nContent-Disposition: form-data; name="bucketName"\r\n\r\nchat\r\n`,
      `--${boundary}\r\nContent-Disposition: form-data; name="metadata"\r\n\r\n{"chatId":"f1"}\r\n`,
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="menu.txt"\r\nContent-Type: text/plain\r\n\r\nSoup of the day: lentils.\r\n`,
      `--${boundary}--\r\n`,
    ].join('');
    const upload = await t.app.inject({ method: 'POST', url: '/api/common/file/upload', headers: { token: tok, 'content-type': `multipart/form-data; boundary=${boundary}` }, payload: form });
    expect(upload.statusCode, upload.body).toBe(200);
    const { previewUrl } = upload.json().data as { previewUrl: string };
    expect(previewUrl.startsWith('/api/common/file/read?')).toBe(true);
    const appId = await createPublishedApp(t, tok, 'File reader', readFilesGraph);
    const res = await completions({ appId, chatId: 'f1', messages: [{ role: 'user', content: [{ type: 'text', text: 'what is on it?' }, { type: 'file_url', name: 'menu.txt', url: previewUrl }] }] });
    expect(res.statusCode, res.body).toBe(200);
    const content = res.json().choices[0].message.content as string;
    expect(content).toContain('File: menu.txt');
    expect(content).toContain('Soup of the day: lentils.');
    // Links a client made up are files that cannot be read, not a failed turn.
    const odd = await completions({ appId, messages: [{ role: 'user', content: [{ type: 'text', text: 'read' }, { type: 'file_url', name: 'a', url: 'http://[a.pdf' }, { type: 'file_url', name: 'b', url: '/x/%E0.txt' }] }] });
    expect(odd.statusCode, odd.body).toBe(200);
    expect(odd.json().choices[0].message.content).toMatch(/could not be read/);

    // Documents only, this question's first, then earlier questions' (as the reference): an image
    // or a link without an extension is not read; the detail previews 100 characters a file.
    const later = await completions({
      appId,
      chatId: 'f1',
      detail: true,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'and this?' }, { type: 'image_url', image_url: { url: 'https://img.example/cat.png' } }, { type: 'file_url', name: 'x', url: 'https://files.example/no-extension' }] }],
    });
    expect(later.statusCode, later.body).toBe(200);
    const detail = later.json().responseData.find((r: { moduleType: string }) => r.moduleType === 'readFiles');
    expect(detail.readFiles).toEqual([{ url: previewUrl, name: 'menu.txt' }]);
    expect(detail.readFilesResult).toBe('File: menu.txt\n<Content>\nSoup of the day: lentils.\n</Content>');
  });
});
