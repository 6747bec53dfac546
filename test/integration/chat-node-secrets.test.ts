import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi, SeenRequest } from '../helpers/fake-openai.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { call, ok } from './apps-helpers.js';
import { chain, createPublishedApp, sseFrames, startChatApp } from './chat-helpers.js';

/**
 * A read-only member may chat with an app but not see its workflow, so the node run details they
 * get (completions with detail, getResData) and the stored chat items hold none of the
 * credentials the workflow's nodes send: HTTP header values masked (names kept), credential-named
 * query and body fields masked, and those values masked wherever else they show (a body field of
 * another name, a service that echoes the request). What a flow is debugged by stays.
 */
let t: TestApp;
let fake: FakeOpenAi;
let ownerToken: string;
let readerToken: string;
let httpAppId: string;
let codeAppId: string;
let readerTmbId: string;

const HEADER_SECRET = 'sk-SUPER-SECRET-123';
const QUERY_SECRET = 'AIza-QUERY-SECRET-456';
const BODY_SECRET = 'body-secret-789xyz';
const CODE_SECRET = 'code-input-secret-42';
const SECRETS = [HEADER_SECRET, QUERY_SECRET, BODY_SECRET, CODE_SECRET];
const seen: SeenRequest[] = [];

const httpGraph = (url: string) =>
  chain(
    {
      nodeId: 'http',
      flowNodeType: 'httpRequest468',
      name: 'Vendor call',
      inputs: [
        { key: 'system_httpMethod', value: 'POST' },
        { key: 'system_httpReqUrl', value: url },
        {
          key: 'system_httpHeader',
          value: [
            { key: 'Authorization', value: `Bearer ${HEADER_SECRET}` },
            { key: 'X-Trace', value: 'trace-{{$start.userChatInput$}}' },
          ],
        },
        {
          key: 'system_httpParams',
          value: [
            { key: 'key', value: QUERY_SECRET },
            { key: 'q', value: '{{$start.userChatInput$}}' },
          ],
        },
        { key: 'system_httpJsonBody', value: `{"api_key": "${BODY_SECRET}", "copy": "${HEADER_SECRET}", "note": "plain note", "question": "{{$start.userChatInput$}}"}` },
      ],
      outputs: [{ id: 'httpRawResponse', key: 'httpRawResponse', valueType: 'any' }],
    },
    { nodeId: 'ans', flowNodeType: 'answerNode', name: 'Answer', inputs: [{ key: 'text', value: 'done' }], outputs: [] },
  );

const codeGraph = chain(
  {
    nodeId: 'code',
    flowNodeType: 'code',
    name: 'Signer',
    inputs: [
      { key: 'system_addInputParam', renderTypeList: ['addInputParam'], value: {} },
      { key: 'apiKey', canEdit: true, value: CODE_SECRET, valueType: 'string' },
      { key: 'text', canEdit: true, value: ['start', 'userChatInput'], valueType: 'string' },
      { key: 'codeType', value: 'js' },
      { key: 'code', value: 'function main({apiKey, text}) { return { used: apiKey, text } }' },
    ],
    outputs: [{ id: 'text', key: 'text', type: 'dynamic', valueType: 'string' }],
  },
  { nodeId: 'ans', flowNodeType: 'answerNode', name: 'Answer', inputs: [{ key: 'text', value: 'done' }], outputs: [] },
);

/** Credentials in a raw-text body the user typed: under a credential name (short), and credential-shaped under other names. */
const SHORT_SECRET = 'Zq7!x';
const RAW_BEARER = 'rawBearer0042xyz';
const URL_PASSWORD = 'UrlPass99';
const RAW_JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJyYXcifQ.c2lnbmF0dXJlLXBhcnQ';
const RAW_SECRETS = [SHORT_SECRET, RAW_BEARER, URL_PASSWORD, RAW_JWT];
const rawBody = `{"token": "${SHORT_SECRET}", "note": "Bearer ${RAW_BEARER}", "db": "postgres://svc:${URL_PASSWORD}@db.internal/x", "jwt": "${RAW_JWT}", "question": "{{$start.userChatInput$}}"}`;
const rawGraph = (url: string) =>
  chain(
    {
      nodeId: 'http',
      flowNodeType: 'httpRequest468',
      name: 'Raw call',
      inputs: [
        { key: 'system_httpMethod', value: 'POST' },
        { key: 'system_httpReqUrl', value: url },
        { key: 'system_httpContentType', value: 'raw-text' },
        { key: 'system_httpHeader', value: [{ key: 'X-Auth-Pin', value: SHORT_SECRET }] },
        { key: 'system_httpJsonBody', value: rawBody },
      ],
      outputs: [{ id: 'httpRawResponse', key: 'httpRawResponse', valueType: 'any' }],
    },
    { nodeId: 'ans', flowNodeType: 'answerNode', name: 'Answer', inputs: [{ key: 'text', value: 'done' }], outputs: [] },
  );

const completions = (token: string, payload: Record<string, unknown>) => t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: authHeaders(token), payload });

const nodeOf = (responses: { moduleType: string }[], type: string) => responses.find((r) => r.moduleType === type) as Record<string, unknown> | undefined;

function expectNoSecret(value: unknown): void {
  const text = JSON.stringify(value);
  for (const secret of SECRETS) expect(text).not.toContain(secret);
}

beforeAll(async () => {
  ({ t, fake } = await startChatApp((f) => ({ SANDBOX_URL: f.origin })));
  // The vendor echoes what it was sent, as debugging services (httpbin) do.
  fake.route('POST', '/vendor', (request) => {
    seen.push(request);
    return { json: { authorization: request.headers.authorization, received: request.body } };
  });
  fake.route('POST', '/sandbox/js', (request) => {
    const { variables } = request.body as { variables: { apiKey: string; text: string } };
    return { json: { success: true, data: { codeReturn: { used: variables.apiKey, text: variables.text }, log: `signed with ${variables.apiKey}` } } };
  });
  const owner = await createUser(t, { username: 'secret-owner', password: 'password-s1' });
  const reader = await createUser(t, { username: 'secret-reader', password: 'password-s2', teamId: owner.teamId, role: 'member', permission: 4 });
  readerTmbId = reader.tmbId;
  ownerToken = await login(t, 'secret-owner', 'password-s1');
  readerToken = await login(t, 'secret-reader', 'password-s2');
  httpAppId = await createPublishedApp(t, ownerToken, 'Vendor bot', httpGraph(`${fake.origin}/vendor`));
  codeAppId = await createPublishedApp(t, ownerToken, 'Signer bot', codeGraph);
  for (const appId of [httpAppId, codeAppId]) await ok(t, ownerToken, 'POST', '/core/app/collaborator/update', { appId, tmbIds: [reader.tmbId], permission: 4 });
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe("a read-only member's view of an HTTP node's run", () => {
  it('the reader may chat but not read the workflow', async () => {
    const detail = await ok(t, readerToken, 'GET', '/core/app/detail', { appId: httpAppId });
    expectNoSecret(detail);
    expect((await call(t, readerToken, 'GET', '/core/app/version/latest', { appId: httpAppId })).status).toBe(403);
  });

  it('completions with detail: the node sent the credentials, its detail shows them masked and keeps the rest', async () => {
    const res = await completions(readerToken, { appId: httpAppId, chatId: 'r1', responseChatItemId: 'ra1', detail: true, stream: false, messages: [{ role: 'user', content: 'weather' }] });
    expect(res.statusCode, res.body).toBe(200);
    // The call itself is unchanged.
    const sent = seen.at(-1)!;
    expect(sent.headers.authorization).toBe(`Bearer ${HEADER_SECRET}`);
    expect(sent.body).toEqual({ api_key: BODY_SECRET, copy: HEADER_SECRET, note: 'plain note', question: 'weather' });

    const node = nodeOf(res.json().responseData, 'httpRequest468')!;
    expect(node.headers).toEqual({ Authorization: '******', 'X-Trace': '******', 'content-type': 'application/json' });
    expect(node.params).toEqual({ key: '******', q: 'weather' });
    expect(node.body).toEqual({ api_key: '******', copy: '******', note: 'plain note', question: 'weather' });
    expect(node.httpResult).toEqual({ authorization: '******', received: { api_key: '******', copy: '******', note: 'plain note', question: 'weather' } });
    expectNoSecret(res.json());
  });

  it('getResData and the stored chat item hold no credential', async () => {
    const resData = await ok(t, readerToken, 'GET', '/core/chat/getResData', { appId: httpAppId, chatId: 'r1', dataId: 'ra1' });
    expect(nodeOf(resData, 'httpRequest468')?.headers).toEqual({ Authorization: '******', 'X-Trace': '******', 'content-type': 'application/json' });
    expectNoSecret(resData);
    const item = await t.app.mongo.db.collection('chatitems').findOne({ appId: new ObjectId(httpAppId), chatId: 'r1', dataId: 'ra1' });
    expect(item?.responseData).toBeDefined();
    expectNoSecret(item);
  });

  it('the streamed flowResponses frame holds no credential either', async () => {
    const res = await completions(readerToken, { appId: httpAppId, chatId: 'r2', detail: true, stream: true, messages: [{ role: 'user', content: 'rain' }] });
    expect(res.statusCode).toBe(200);
    const frame = sseFrames(res.body).find((f) => f.event === 'flowResponses');
    expect(nodeOf(JSON.parse(frame!.data), 'httpRequest468')?.headers).toMatchObject({ Authorization: '******' });
    expectNoSecret(res.body);
  });
});

describe('a raw-text body the user typed', () => {
  it('shows its credential-named values (however short) and its credential-shaped texts masked, in the body and the echo; the call sends them', async () => {
    const appId = await createPublishedApp(t, ownerToken, 'Raw bot', rawGraph(`${fake.origin}/vendor`));
    await ok(t, ownerToken, 'POST', '/core/app/collaborator/update', { appId, tmbIds: [readerTmbId], permission: 4 });
    const res = await completions(readerToken, { appId, chatId: 'raw1', responseChatItemId: 'rawa1', detail: true, stream: false, messages: [{ role: 'user', content: 'weather' }] });
    expect(res.statusCode, res.body).toBe(200);
    const sent = seen.at(-1)!;
    expect(sent.headers['x-auth-pin']).toBe(SHORT_SECRET);
    expect(sent.raw.toString('utf8')).toBe(rawBody.replace('{{$start.userChatInput$}}', 'weather'));

    const node = nodeOf(res.json().responseData, 'httpRequest468')!;
    expect(node.body).toBe(`{"token": "******", "note": "Bearer ******", "db": "postgres://******@db.internal/x", "jwt": "******", "question": "weather"}`);
    expect(node.httpResult).toEqual({ received: { token: '******', note: 'Bearer ******', db: 'postgres://******@db.internal/x', jwt: '******', question: 'weather' } });
    const text = JSON.stringify(res.json());
    for (const secret of RAW_SECRETS) expect(text).not.toContain(secret);
    const item = JSON.stringify(await t.app.mongo.db.collection('chatitems').findOne({ appId: new ObjectId(appId), chatId: 'raw1', dataId: 'rawa1' }));
    for (const secret of RAW_SECRETS) expect(item).not.toContain(secret);
  });
});

describe("a code node's credential-named input", () => {
  it('is masked in its detail, and where the code answers or logs it', async () => {
    const res = await completions(readerToken, { appId: codeAppId, chatId: 'c1', responseChatItemId: 'ca1', detail: true, stream: false, messages: [{ role: 'user', content: 'sign me' }] });
    expect(res.statusCode, res.body).toBe(200);
    const node = nodeOf(res.json().responseData, 'code')!;
    expect(node.customInputs).toEqual({ apiKey: '******', text: 'sign me' });
    expect(node.customOutputs).toEqual({ used: '******', text: 'sign me' });
    expect(node.codeLog).toBe('signed with ******');
    expectNoSecret(res.json());
    expectNoSecret(await t.app.mongo.db.collection('chatitems').findOne({ appId: new ObjectId(codeAppId), chatId: 'c1', dataId: 'ca1' }));
  });
});
