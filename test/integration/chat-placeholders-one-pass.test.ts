/**
 * A caller's values (variables, sent by API-key callers and share-link or team-space visitors)
 * are inserted into a node's texts as written: a value holding `{{$node.output$}}` or `{{key}}`
 * is never read again as a placeholder. Before, `{{key}}` was filled first and the result read
 * for `{{$…$}}` references: a visitor's variable could name any node's raw output (past a share
 * link's hidden details) or the running HTTP node's own headers, which a URL then carried out.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { apiKeyHeaders, createApiKey, createUser, login } from '../helpers/platform.js';
import { chain, createPublishedApp, startChatApp } from './chat-helpers.js';

let t: TestApp;
let fake: FakeOpenAi;
let key: string;
let appId: string;
let tok: string;
let echo: Server;
const received: { url: string; authorization?: string }[] = [];

const SECRET = 'sk-live-0123456789abcdef';
const PRIVATE_ANSWER = 'private-record-42';

const ref = (nodeId: string, key: string) => [nodeId, key];

/** The HTTP node `http`: a GET of `url` with the secret header, and `extra` inputs. */
const lookupNode = (url: string, extra: Record<string, unknown>[] = []) => ({
  nodeId: 'http',
  flowNodeType: 'httpRequest468',
  name: 'Lookup',
  inputs: [
    { key: 'system_addInputParam', renderTypeList: ['addInputParam'], value: {} },
    { key: 'system_httpMethod', value: 'GET' },
    { key: 'system_httpReqUrl', value: url },
    { key: 'system_httpHeader', value: [{ key: 'Authorization', type: 'string', value: `Bearer ${SECRET}` }] },
    ...extra,
  ],
  outputs: [{ id: 'httpRawResponse', key: 'httpRawResponse', valueType: 'any' }],
});

const graph = (echoUrl: string) =>
  chain(
    lookupNode(`${echoUrl}/lookup`, [{ key: 'system_httpParams', value: [{ key: 'q', type: 'string', value: '{{q}}' }] }]),
    { nodeId: 'hello', flowNodeType: 'answerNode', name: 'Hello', inputs: [{ key: 'text', value: 'Hi {{name}}. ' }], outputs: [] },
    {
      nodeId: 'editor',
      flowNodeType: 'textEditor',
      name: 'Editor',
      inputs: [
        { key: 'system_addInputParam', renderTypeList: ['addInputParam'], value: {} },
        { key: 'record', canEdit: true, value: ref('http', 'httpRawResponse'), valueType: 'string' },
        { key: 'system_textareaInput', value: 'E[{{name}}|{{$VARIABLE_NODE_ID.q$}}]' },
      ],
      outputs: [{ id: 'system_text', key: 'system_text', valueType: 'string' }],
    },
    { nodeId: 'edited', flowNodeType: 'answerNode', name: 'Edited', inputs: [{ key: 'text', value: ref('editor', 'system_text') }], outputs: [] },
    {
      nodeId: 'update',
      flowNodeType: 'variableUpdate',
      name: 'Update',
      inputs: [{ key: 'updateList', value: [{ variable: ['VARIABLE_NODE_ID', 'copy'], value: ['', 'U[{{name}}]'], valueType: 'string', renderType: 'input' }] }],
      outputs: [],
    },
    { nodeId: 'updated', flowNodeType: 'answerNode', name: 'Updated', inputs: [{ key: 'text', value: ' {{copy}}' }], outputs: [] },
    {
      nodeId: 'plugin',
      flowNodeType: 'pluginModule',
      name: 'Template',
      pluginId: 'community-textEditor',
      inputs: [
        { key: 'system_addInputParam', renderTypeList: ['addInputParam'], value: {} },
        { key: 'record', canEdit: true, value: ref('http', 'httpRawResponse'), valueType: 'string' },
        { key: 'text', value: ' P[{{name}}|{{greeting}}]', valueType: 'string' },
        { key: 'greeting', canEdit: true, value: 'hello', valueType: 'string' },
      ],
      outputs: [{ id: 'text', key: 'text', valueType: 'string' }],
    },
    { nodeId: 'templated', flowNodeType: 'answerNode', name: 'Templated', inputs: [{ key: 'text', value: ref('plugin', 'text') }], outputs: [] },
  );

beforeAll(async () => {
  echo = createServer((req, res) => {
    received.push({ url: req.url ?? '', authorization: req.headers.authorization });
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ record: PRIVATE_ANSWER, echoed: req.url }));
  });
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  ({ t, fake } = await startChatApp());
  await createUser(t, { username: 'templater', password: 'password-tp1' });
  tok = await login(t, 'templater', 'password-tp1');
  appId = await createPublishedApp(t, tok, 'Lookup bot', graph(`http://127.0.0.1:${(echo.address() as AddressInfo).port}`));
  key = await createApiKey(t, tok);
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
  echo?.close();
});

describe("a caller's variable in the HTTP node's own URL", () => {
  it('is inserted as written: the URL carries it, not the node\'s headers', async () => {
    const echoUrl = `http://127.0.0.1:${(echo.address() as AddressInfo).port}`;
    const urlApp = await createPublishedApp(t, tok, 'URL bot', chain(lookupNode(`${echoUrl}/lookup?q={{q}}`)));
    received.length = 0;
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: apiKeyHeaders(key), payload: { appId: urlApp, variables: { q: '{{$http.system_httpHeader$}}' }, messages: [{ role: 'user', content: 'go' }] } });
    expect(res.statusCode, res.body).toBe(200);
    expect(received).toHaveLength(1);
    expect(decodeURIComponent(received[0]!.url)).toBe('/lookup?q={{$http.system_httpHeader$}}');
    expect(received[0]!.url).not.toContain('sk-live');
  });
});

describe("a caller's variables holding placeholders", () => {
  it('are inserted as written in every kind of node text: no node output, input or header is read through them', async () => {
    received.length = 0;
    const variables = {
      q: '{{$http.system_httpHeader$}}',
      name: '{{$http.httpRawResponse$}} {{record}} {{greeting}}',
    };
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: apiKeyHeaders(key), payload: { appId, chatId: 'one-pass', variables, messages: [{ role: 'user', content: 'go' }] } });
    expect(res.statusCode, res.body).toBe(200);

    // The HTTP node's query carries the value as written, not its own headers.
    expect(received).toHaveLength(1);
    expect(decodeURIComponent(received[0]!.url.replace(/\+/g, ' '))).toBe('/lookup?q={{$http.system_httpHeader$}}');
    expect(received[0]!.authorization).toBe(`Bearer ${SECRET}`);

    // Each answer node's text on a line of its own, as the reference joins them.
    const answer = (res.json().choices[0].message.content as string).replace(/\n/g, '');
    const shown = `{{$http.httpRawResponse$}} {{record}} {{greeting}}`;
    // The answer node, the text editor (its own inputs and the references it fills), the
    // variable update and the template plugin: each shows the caller's value as sent.
    expect(answer).toBe(`Hi ${shown}. E[${shown}|{{$http.system_httpHeader$}}] U[${shown}] P[${shown}|hello]`);
    expect(answer).not.toContain(PRIVATE_ANSWER);
    expect(answer).not.toContain(SECRET);
  });

  it("the app's own placeholders still read node outputs, inputs and variables", async () => {
    received.length = 0;
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: apiKeyHeaders(key), payload: { appId, chatId: 'plain', variables: { q: 'cats', name: 'Ada' }, messages: [{ role: 'user', content: 'go' }] } });
    expect(res.statusCode, res.body).toBe(200);
    expect(received[0]!.url).toBe('/lookup?q=cats');
    expect((res.json().choices[0].message.content as string).replace(/\n/g, '')).toBe('Hi Ada. E[Ada|cats] U[Ada] P[Ada|hello]');
  });
});
