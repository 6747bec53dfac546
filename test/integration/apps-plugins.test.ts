import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SELF_CALL_HEADER, selfCallHeaders } from '../../src/infra/self-call-token.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';
import { call, ok } from './apps-helpers.js';

let t: TestApp;
let open: TestApp;
let tok: string;
let openTok: string;
let server: http.Server;
let base: string;

const schemaV3 = {
  openapi: '3.0.0',
  servers: [{ url: 'https://api.example.com' }],
  paths: {
    '/pets': {
      get: { operationId: 'listPets', summary: 'List pets', parameters: [{ name: 'limit', in: 'query', schema: { type: 'integer' } }] },
      post: { operationId: 'createPet', requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/Pet' } } } } },
    },
    '/pets/{id}': { get: { operationId: 'getPet', description: 'One pet', parameters: [{ name: 'id', in: 'path', required: true }] }, delete: { operationId: 'old', deprecated: true } },
  },
  components: { schemas: { Pet: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, age: { type: 'integer' } } } } },
};
const schemaYaml = `
swagger: "2.0"
host: api.example.com
basePath: /v2
paths:
  /pets:
    get:
      operationId: listPets
      description: List all pets (v2)
  /owners:
    get:
      operationId: listOwners
`;

async function children(parentId: string) {
  const list = await ok(t, tok, 'POST', '/core/app/list', { parentId });
  return list.map((a: { name: string; intro: string; type: string }) => a).sort((a: { name: string }, b: { name: string }) => a.name.localeCompare(b.name));
}
async function httpPluginId(name: string) {
  return (await ok(t, tok, 'POST', '/core/app/list', { type: 'httpPlugin' })).find((a: { name: string }) => a.name === name)._id as string;
}

beforeAll(async () => {
  t = await buildTestApp({ PLAN_MAX_APPS: '12' });
  open = await buildTestApp({ SSRF_ALLOW_PRIVATE: 'true' });
  await createUser(t, { username: 'plug-user', password: 'password-1' });
  await createUser(open, { username: 'plug-open', password: 'password-1' });
  tok = await login(t, 'plug-user', 'password-1');
  openTok = await login(open, 'plug-open', 'password-1');
  server = http.createServer((req, res) => {
    if (req.url === '/openapi.json') return res.end(JSON.stringify(schemaV3));
    if (req.url === '/openapi.yaml') return res.end(schemaYaml);
    if (req.url === '/typed.yaml') return res.end('swagger: 2.0\npaths:\n  /a:\n    get:\n      operationId: 404\n      deprecated: false\n');
    if (req.url === '/page') return res.end('<html><body><h1>Title</h1><script>x()</script><p>Body text</p></body></html>');
    if (req.url === '/not-a-schema') return res.end('{"hello": 1}');
    if (req.url === '/deep.json') return res.end(`{"openapi":"3.0.0","paths":{},"x":${'['.repeat(5000)}${']'.repeat(5000)}}`);
    res.statusCode = 404;
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  server.close();
  await t.close();
  await open.close();
});

describe('HTTP plugins', () => {
  it('creates one child plugin per operation and reconciles them on update', async () => {
    await ok(t, tok, 'POST', '/core/app/httpPlugin/create', { name: 'Pets', intro: 'pets api', pluginData: { apiSchemaStr: JSON.stringify(schemaV3), customHeaders: '{"x-key":"k"}' } });
    const id = await httpPluginId('Pets');
    const before = await children(id);
    expect(before.map((c: { name: string }) => c.name)).toEqual(['createPet', 'getPet', 'listPets']);
    expect(before.every((c: { type: string }) => c.type === 'plugin')).toBe(true);
    const getPet = before.find((c: { name: string }) => c.name === 'getPet');
    const detail = await ok(t, tok, 'GET', '/core/app/detail', { appId: getPet._id });
    expect(detail.intro).toBe('One pet');
    const httpNode = detail.modules.find((n: { flowNodeType: string }) => n.flowNodeType === 'httpRequest468');
    expect(httpNode.inputs.find((i: { key: string }) => i.key === 'system_httpReqUrl').value).toBe('https://api.example.com/pets/{{id}}');
    expect(httpNode.inputs.find((i: { key: string }) => i.key === 'system_httpHeader').value).toEqual([{ key: 'x-key', type: 'string', value: 'k' }]);
    const createPet = await ok(t, tok, 'GET', '/core/app/detail', { appId: before.find((c: { name: string }) => c.name === 'createPet')._id });
    const input = createPet.modules.find((n: { flowNodeType: string }) => n.flowNodeType === 'pluginInput');
    expect(input.inputs.map((i: { key: string; required: boolean }) => [i.key, i.required])).toEqual([
      ['name', true],
      ['age', false],
    ]);
    const preview = await ok(t, tok, 'GET', '/core/app/plugin/getPreviewNode', { appId: getPet._id });
    expect(preview).toMatchObject({ pluginId: getPet._id, flowNodeType: 'pluginModule', templateType: 'teamApp', isTool: true });
    expect(preview.inputs.map((i: { key: string }) => i.key)).toEqual(['id']);
    expect(preview.outputs.map((o: { key: string }) => o.key)).toEqual(['result']);

    // A plugin someone moved into the container (named as an operation the new schema drops) is not the schema's to delete.
    const handMade = await ok(t, tok, 'POST', '/core/app/create', { name: 'getPet', type: 'plugin', intro: 'hand made', modules: [], edges: [] });
    await ok(t, tok, 'POST', '/core/app/update', { appId: handMade, parentId: id });
    await ok(t, tok, 'POST', '/core/app/httpPlugin/update', { appId: id, name: 'Pets v2', pluginData: { apiSchemaStr: schemaYaml } });
    const inContainer = await children(id);
    expect(inContainer.find((c: { _id: string }) => c._id === handMade)).toMatchObject({ name: 'getPet', intro: 'hand made' });
    await ok(t, tok, 'POST', '/core/app/del', { appId: handMade });
    const after = inContainer.filter((c: { _id: string }) => c._id !== handMade);
    expect(after.map((c: { name: string }) => c.name)).toEqual(['listOwners', 'listPets']);
    const kept = after.find((c: { name: string }) => c.name === 'listPets');
    expect(kept._id).toBe(before.find((c: { name: string }) => c.name === 'listPets')._id);
    expect(kept.intro).toBe('List all pets (v2)');
    const removed = await call(t, tok, 'GET', '/core/app/detail', { appId: getPet._id });
    expect(removed.status).toBe(404);
    const parent = await ok(t, tok, 'GET', '/core/app/detail', { appId: id });
    expect(parent).toMatchObject({ name: 'Pets v2', pluginData: { apiSchemaStr: schemaYaml } });
  });

  // A copy of a generated child keeps its pluginUniId (as the reference's copy): an update then
  // rewrote one of the two and left the other on the old schema for good.
  it('an update regenerates every child of a kept operation, a copy of one too', async () => {
    const schemaAt = (host: string) => JSON.stringify({ openapi: '3.0.0', servers: [{ url: `https://${host}` }], paths: { '/pets': { get: { operationId: 'listPets' } } } });
    await ok(t, tok, 'POST', '/core/app/httpPlugin/create', { name: 'Copied pets', pluginData: { apiSchemaStr: schemaAt('old.example.com') } });
    const container = await httpPluginId('Copied pets');
    const [original] = await children(container);
    const { appId: copy } = await ok(t, tok, 'POST', '/core/app/copy', { appId: original._id });
    await ok(t, tok, 'POST', '/core/app/httpPlugin/update', { appId: container, name: 'Copied pets', pluginData: { apiSchemaStr: schemaAt('new.example.com') } });
    expect((await children(container)).map((c: { _id: string }) => c._id).sort()).toEqual([original._id, copy].sort());
    for (const id of [original._id, copy]) {
      const modules = JSON.stringify((await ok(t, tok, 'GET', '/core/app/detail', { appId: id })).modules);
      expect(modules, id).toContain('https://new.example.com/pets');
      expect(modules, id).not.toContain('old.example.com');
    }
  });

  it('a create that fails at a child takes the whole plugin back, its room too', async () => {
    const apps = t.app.mongo.db.collection('apps');
    const before = await apps.countDocuments({});
    const { versions } = t.app.apps.deps;
    const insert = versions.insert;
    let calls = 0;
    // The second child's version fails to land (the database went away).
    versions.insert = async (version) => {
      calls += 1;
      if (calls === 2) throw new Error('connection reset');
      return insert.call(versions, version);
    };
    try {
      const r = await call(t, tok, 'POST', '/core/app/httpPlugin/create', { name: 'Half made', pluginData: { apiSchemaStr: schemaYaml } });
      expect(r.status).toBe(500);
    } finally {
      versions.insert = insert;
    }
    expect(await apps.countDocuments({})).toBe(before);
    // A retry makes one whole plugin, not a second container beside a broken one (the plan room came back).
    await ok(t, tok, 'POST', '/core/app/httpPlugin/create', { name: 'Half made', pluginData: { apiSchemaStr: schemaYaml } });
    const id = await httpPluginId('Half made');
    expect((await children(id)).map((child: { name: string }) => child.name)).toEqual(['listOwners', 'listPets']);
    await ok(t, tok, 'POST', '/core/app/del', { appId: id });
  });

  it('invalid schemas are a 400 with the reason and create nothing', async () => {
    const count = async () => (await ok(t, tok, 'POST', '/core/app/list', {})).length;
    const before = await count();
    // Fields that are objects where text belongs (one with a toString that is not a function) too.
    const oddVersion = '{"openapi":{"toString":1},"paths":{}}';
    for (const apiSchemaStr of ['{not json: [', 'just: yaml', JSON.stringify({ openapi: '3.0.0', paths: { '/a': { get: { requestBody: { $ref: '#/nope' } } } } }), oddVersion]) {
      const r = await call(t, tok, 'POST', '/core/app/httpPlugin/create', { name: 'bad', pluginData: { apiSchemaStr } });
      expect(r.status).toBe(400);
      expect(r.body.message).toMatch(/Invalid Schema/);
    }
    // Descriptions that are objects (a toString that is not a function) read as no description.
    const oddDescriptions = '{"openapi":"3.0.0","paths":{"/a":{"get":{"operationId":"odd","description":{"toString":1},"summary":{"valueOf":2}}}}}';
    const odd = await call(t, tok, 'POST', '/core/app/httpPlugin/create', { name: 'odd descriptions', pluginData: { apiSchemaStr: oddDescriptions } });
    expect(odd.status, JSON.stringify(odd.body)).toBe(200);
    await ok(t, tok, 'POST', '/core/app/del', { appId: await httpPluginId('odd descriptions') });
    const badHeaders = await call(t, tok, 'POST', '/core/app/httpPlugin/create', { name: 'bad', pluginData: { apiSchemaStr: schemaYaml, customHeaders: '{x' } });
    expect(badHeaders.status).toBe(400);
    expect(await count()).toBe(before);
    const id = await httpPluginId('Pets v2');
    const r = await call(t, tok, 'POST', '/core/app/httpPlugin/update', { appId: id, name: 'broken', pluginData: { apiSchemaStr: 'x: [' } });
    expect(r.status).toBe(400);
    expect((await ok(t, tok, 'GET', '/core/app/detail', { appId: id })).name).toBe('Pets v2');
    expect(await children(id)).toHaveLength(2);
  });

  it('enforces the team app limit on create, copy and httpPlugin create', async () => {
    let refused: { status: number; body: { statusText: string } } | undefined;
    for (let i = 0; i < 15 && !refused; i++) {
      const r = await call(t, tok, 'POST', '/core/app/create', { name: `fill ${i}`, type: 'simple', modules: [] });
      if (r.status !== 200) refused = r;
    }
    expect(refused?.status).toBe(403);
    expect(refused?.body.statusText).toBe('appAmountNotEnough');
    const any = (await ok(t, tok, 'POST', '/core/app/list', { type: 'simple' }))[0]._id;
    expect((await call(t, tok, 'POST', '/core/app/copy', { appId: any })).body.statusText).toBe('appAmountNotEnough');
    const hp = await call(t, tok, 'POST', '/core/app/httpPlugin/create', { name: 'more', pluginData: { apiSchemaStr: schemaYaml } });
    expect(hp.body.statusText).toBe('appAmountNotEnough');
    // Folders do not count.
    expect((await call(t, tok, 'POST', '/core/app/folder/create', { name: 'still fine' })).status).toBe(200);
  });
});

describe('getApiSchemaByUrl (SSRF guard)', () => {
  it('refuses loopback, private and link-local targets by default', async () => {
    for (const url of [`${base}/openapi.json`, 'http://localhost/x', 'http://10.0.0.1/x', 'http://169.254.169.254/latest', 'http://[::1]/x', 'file:///etc/passwd']) {
      const r = await call(t, tok, 'POST', '/core/app/httpPlugin/getApiSchemaByUrl', { url });
      expect(r.status, url).toBe(400);
    }
  });
  it('needs a session', async () => {
    expect((await call(t, null, 'POST', '/core/app/httpPlugin/getApiSchemaByUrl', { url: 'https://example.com' })).status).toBe(401);
  });
  it('fetches JSON and YAML documents when private targets are allowed', async () => {
    expect(await ok(open, openTok, 'POST', '/core/app/httpPlugin/getApiSchemaByUrl', { url: `${base}/openapi.json` })).toEqual(schemaV3);
    expect((await ok(open, openTok, 'GET', '/core/app/httpPlugin/getApiSchemaByUrl', { url: `${base}/openapi.yaml` })).swagger).toBe('2.0');
    // YAML's numbers and booleans come back typed; the version is judged as written (`2.0`, not 2).
    expect(await ok(open, openTok, 'GET', '/core/app/httpPlugin/getApiSchemaByUrl', { url: `${base}/typed.yaml` })).toEqual({ swagger: 2, paths: { '/a': { get: { operationId: 404, deprecated: false } } } });
    expect((await call(open, openTok, 'POST', '/core/app/httpPlugin/getApiSchemaByUrl', { url: `${base}/not-a-schema` })).status).toBe(400);
    // A document nested past what a JSON writer walks is a 400 naming the url, not a 500.
    const deep = await call(open, openTok, 'POST', '/core/app/httpPlugin/getApiSchemaByUrl', { url: `${base}/deep.json` });
    expect(deep.status, JSON.stringify(deep.body).slice(0, 200)).toBe(400);
    expect(deep.body.message).toMatch(/^Invalid field 'url'/);
    expect((await call(open, openTok, 'POST', '/core/app/httpPlugin/getApiSchemaByUrl', { url: `${base}/missing` })).status).toBe(502);
  });
  it('the fetchUrl system plugin uses the same guard', async () => {
    await expect(t.app.apps.runSystemPlugin('fetchUrl', { url: `${base}/page` })).rejects.toMatchObject({ httpStatus: 400 });
    expect(await open.app.apps.runSystemPlugin('fetchUrl', { url: `${base}/page` })).toEqual({ result: 'Title\n Body text' });
  });
});

describe('templates and system plugins', () => {
  it('lists and details bundled templates', async () => {
    const list = await ok(t, tok, 'GET', '/core/app/template/list');
    expect(list.map((x: { id: string }) => x.id)).toEqual(['simpleChat', 'knowledgeBaseChat', 'translatorWorkflow', 'httpToolWorkflow']);
    const detail = await ok(t, tok, 'GET', '/core/app/template/detail', { templateId: 'translatorWorkflow' });
    expect(detail).toMatchObject({ id: 'translatorWorkflow', type: 'advanced', workflow: { nodes: expect.any(Array), edges: expect.any(Array) } });
    expect(await ok(t, tok, 'GET', '/core/app/template/detail', { templateId: 'nope' })).toBe(null);
  });

  it('lists system plugins, their path and preview nodes', async () => {
    const all = await ok(t, tok, 'POST', '/core/app/plugin/getSystemPluginTemplates', { parentId: null });
    expect(all.map((p: { id: string }) => p.id)).toEqual(expect.arrayContaining(['community-getTime', 'community-mathExprVal', 'community-fetchUrl']));
    // 4.8.10 made textEditor and customFeedback node types and dropped TFSwitch: they run for old workflows but are not offered.
    for (const id of ['community-textEditor', 'community-TFSwitch', 'community-customFeedback']) expect(all.map((p: { id: string }) => p.id)).not.toContain(id);
    expect((await ok(t, tok, 'POST', '/core/app/plugin/getSystemPluginTemplates', { searchKey: 'text' })).map((p: { id: string }) => p.id)).not.toContain('community-textEditor');
    const search = await ok(t, tok, 'POST', '/core/app/plugin/getSystemPluginTemplates', { searchKey: 'math', parentId: null });
    expect(search.map((p: { id: string }) => p.id)).toEqual(['community-mathExprVal']);
    expect(await ok(t, tok, 'GET', '/core/app/plugin/path', { parentId: 'community-getTime' })).toEqual([{ parentId: 'community-getTime', parentName: 'Current time' }]);
    expect(await ok(t, tok, 'GET', '/core/app/plugin/path', { parentId: '' })).toEqual([]);
    const preview = await ok(t, tok, 'GET', '/core/app/plugin/getPreviewNode', { appId: 'community-mathExprVal' });
    expect(preview).toMatchObject({ pluginId: 'community-mathExprVal', flowNodeType: 'pluginModule', inputs: [{ key: 'expr' }], outputs: [{ key: 'result' }] });
    expect(preview.id).toMatch(/^[A-Za-z0-9]{12}$/);
    expect((await call(t, tok, 'GET', '/core/app/plugin/getPreviewNode', { appId: 'community-nope' })).status).toBe(404);
    expect(await t.app.apps.runSystemPlugin('mathExprVal', { expr: '2 * (3 + 4) ^ 2' })).toEqual({ result: '98' });
    expect((await t.app.apps.runSystemPlugin('getTime', { timezone: 'UTC' }, { now: () => new Date('2024-05-06T07:08:09Z') })).time).toBe('2024-05-06 07:08:09');
  });

  it('serves the public /api/plugins endpoints as raw JSON', async () => {
    // customFeedback writes into chat items: only the service's own workflow runs may call it, into the chat item the run saves.
    const teamOfChats = new ObjectId().toHexString();
    const appX = new ObjectId();
    const selfCall = selfCallHeaders(t.config.TOKEN_KEY, { teamId: teamOfChats, appId: '', chatId: '', dataId: '' });
    const post = async (url: string, payload: Record<string, unknown>) => {
      const r = await t.app.inject({ method: 'POST', url: `/api/plugins/${url}`, payload, headers: selfCall });
      return { status: r.statusCode, body: r.json() };
    };
    expect(await post('TFSwitch/index', { input: 'yes', rule: 'no' })).toEqual({ status: 200, body: { true: true } });
    expect((await post('TFSwitch/index', { input: 'skip me', rule: '/^skip/i' })).body).toEqual({ false: false });
    expect((await post('TFSwitch/index', { input: '0' })).body).toEqual({ false: false });
    expect((await post('textEditor/index', { text: 'Hi {{name}} {{n}}', DYNAMIC_INPUT_KEY: { name: 'Ann', n: 3 } })).body).toEqual({ text: 'Hi Ann 3' });
    expect((await post('textEditor/index', { text: 'x' })).status).toBe(400);
    expect((await post('textEditor/v2/index', { text: '{{o}}', customInputs: { o: { a: 1 } } })).body).toEqual({ text: '{"a":1}' });
    expect((await post('customFeedback/index', { defaultFeedback: 'fine' })).body).toEqual({ response: '\\n\\n**Custom feedback debug**: fine\\n\\n' });
    expect((await post('customFeedback/v2/index', { customFeedback: '' })).body).toEqual({});
    expect((await post('customFeedback/v2/index', { customFeedback: 'score {{s}}', customInputs: { s: 5 } })).body).toEqual({ answerText: '\\n\\n**Custom feedback debug**: "score 5"\\n\\n', text: 'score 5' });

    const db = t.app.mongo.db;
    await db.collection('chatitems').insertOne({ teamId: new ObjectId(teamOfChats), appId: appX, chatId: 'c1', dataId: 'd1', customFeedbacks: [] });
    const runOfC1 = selfCallHeaders(t.config.TOKEN_KEY, { teamId: teamOfChats, appId: appX.toHexString(), chatId: 'c1', dataId: 'd1' });
    const body = { appId: appX.toHexString(), chatId: 'c1', responseChatItemId: 'd1' };
    const saved = await t.app.inject({ method: 'POST', url: '/api/plugins/customFeedback/v2/index', headers: runOfC1, payload: { ...body, customFeedback: 'noted' } });
    expect(saved.json()).toEqual({ text: 'noted' });
    await expect.poll(async () => (await db.collection('chatitems').findOne({ chatId: 'c1' }))?.customFeedbacks).toEqual(['noted']);
    // A run that saves no chat (chatTest) or saves another one cannot name this item in its body.
    const runOfOther = selfCallHeaders(t.config.TOKEN_KEY, { teamId: teamOfChats, appId: appX.toHexString(), chatId: 'c2', dataId: 'd2' });
    for (const headers of [selfCall, runOfOther]) {
      const named = await t.app.inject({ method: 'POST', url: '/api/plugins/customFeedback/v2/index', headers, payload: { ...body, customFeedback: 'into another chat' } });
      expect(named.statusCode).toBe(403);
    }
    // A run of another team (its own valid proof) cannot write into this team's chat.
    const otherTeam = selfCallHeaders(t.config.TOKEN_KEY, { teamId: new ObjectId().toHexString(), appId: appX.toHexString(), chatId: 'c1', dataId: 'd1' });
    const foreign = await t.app.inject({ method: 'POST', url: '/api/plugins/customFeedback/v2/index', headers: otherTeam, payload: { ...body, customFeedback: 'from another team' } });
    expect(foreign.statusCode).toBe(200);
    // A proof of one run sent with another run's scope is no proof.
    const forged = { ...runOfC1, 'x-self-call-scope': otherTeam['x-self-call-scope']! };
    for (const headers of [{}, { [SELF_CALL_HEADER]: 'guessed' }, forged]) {
      const anonymous = await t.app.inject({ method: 'POST', url: '/api/plugins/customFeedback/v2/index', headers, payload: { appId: appX.toHexString(), chatId: 'c1', responseChatItemId: 'd1', customFeedback: 'spam' } });
      expect(anonymous.statusCode).toBe(403);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect((await db.collection('chatitems').findOne({ chatId: 'c1' }))?.customFeedbacks).toEqual(['noted']);
  });
});
