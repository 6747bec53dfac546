import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { ok } from './apps-helpers.js';
import { answerOnlyGraph } from './chat-helpers.js';

/**
 * Request input the database would not store as sent, or would make every later read of its
 * record slow: a non-finite number (JSON's 1e400), an unpaired surrogate (JSON's "\ud800"), and
 * free-form objects (chat variables and metadata, collection metadata, chat configs, a plugin's
 * inputs) past their key bound are each a 400 naming the field, and nothing is stored.
 */
let t: TestApp;
let token: string;
let appId: string;
let datasetId: string;

beforeAll(async () => {
  t = await buildTestApp();
  await createUser(t, { username: 'bounds-owner', password: 'password-b1' });
  token = await login(t, 'bounds-owner', 'password-b1');
  appId = await ok(t, token, 'POST', '/core/app/create', { name: 'Answer bot', type: 'advanced', modules: answerOnlyGraph.nodes, edges: answerOnlyGraph.edges, chatConfig: {} });
  datasetId = await ok(t, token, 'POST', '/core/dataset/create', { name: 'Bounds' });
});
afterAll(() => t?.close());

/** A JSON body sent as written (so 1e400 and "\ud800" reach the parser as text). */
const postRaw = async (url: string, json: string, headers: Record<string, string> = authHeaders(token)) => {
  const res = await t.app.inject({ method: 'POST', url: `/api${url}`, headers: { ...headers, 'content-type': 'application/json' }, payload: json });
  return { status: res.statusCode, body: res.json() as Record<string, unknown> & { message?: string } };
};
const keys = (count: number) => JSON.stringify(Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${i}`, i])));
const collections = () => t.app.mongo.db.collection('dataset_collections').countDocuments({});

describe('non-finite numbers and unpaired surrogates', () => {
  it('collection metadata with 1e400 or an unpaired surrogate in a key is a 400 naming the field, and no collection is made; one in a value is stored as U+FFFD', async () => {
    const before = await collections();
    const base = `"datasetId":"${datasetId}","name":"meta"`;
    const cases: [string, RegExp][] = [
      [`{${base},"metadata":{"n":1e400}}`, /^Invalid field 'metadata\.n': must be a finite number$/],
      [`{${base},"metadata":{"list":[1,-1e400]}}`, /^Invalid field 'metadata\.list\.1': must be a finite number$/],
      [`{${base},"metadata":{"\\udc00":"v"}}`, /^Invalid field 'metadata': must be well-formed Unicode text/],
    ];
    for (const [json, message] of cases) {
      const res = await postRaw('/core/dataset/collection/create', json);
      expect(res.status, json).toBe(400);
      expect(res.body.message).toMatch(message);
    }
    expect(await collections()).toBe(before);
    // A surrogate pair (an emoji) is well-formed text, stored as sent.
    const made = await postRaw('/core/dataset/collection/create', `{${base},"metadata":{"mood":"\\ud83d\\ude00"}}`);
    expect(made.status).toBe(200);
    const stored = await t.app.mongo.db.collection('dataset_collections').findOne({ name: 'meta' });
    expect(JSON.stringify(stored)).toContain('😀');
    const mended = await postRaw('/core/dataset/collection/create', `{"datasetId":"${datasetId}","name":"mended","metadata":{"k":"a\\ud800"}}`);
    expect(mended.status).toBe(200);
    const collection = await postRaw('/core/dataset/collection/detail', JSON.stringify({ id: mended.body.data }));
    expect((collection.body.data as { metadata: unknown }).metadata).toMatchObject({ k: 'a\ufffd' });
  });

  it('a chat turn whose question and variables hold half an emoji (a client cutting by length) runs, the half read as U+FFFD', async () => {
    const res = await postRaw('/v1/chat/completions', `{"appId":"${appId}","chatId":"s1","messages":[{"role":"user","content":"hi \\ud83d"}],"variables":{"name":"\\ud800"}}`);
    expect(res.status).toBe(200);
    const chat = await t.app.mongo.db.collection('chats').findOne({ chatId: 's1' });
    expect(chat!.variables).toMatchObject({ name: '\ufffd' });
    // A key cannot be mended (it would name another field): refused.
    const key = await postRaw('/v1/chat/completions', `{"appId":"${appId}","chatId":"s2","messages":[{"role":"user","content":"hi"}],"variables":{"\\ud800":"x"}}`);
    expect(key.status).toBe(400);
    expect(key.body.message).toMatch(/^Invalid field 'variables': must be well-formed Unicode text/);
  });
});

describe('free-form objects', () => {
  const turn = (chatId: string, extra: string) => postRaw('/v1/chat/completions', `{"appId":"${appId}","chatId":"${chatId}","messages":[{"role":"user","content":"hi"}],${extra}}`);

  it('chat variables: 1000 keys are a turn, 1001 a 400 naming the field (nothing stored)', async () => {
    expect((await turn('v-ok', `"variables":${keys(1000)}`)).status).toBe(200);
    const refused = await turn('v-many', `"variables":${keys(1001)}`);
    expect(refused.status).toBe(400);
    expect(refused.body.message).toMatch(/^Invalid field 'variables': more than 1000 keys/);
    const metadata = await turn('v-many', `"metadata":{"a":${keys(1000)}}`);
    expect(metadata.status).toBe(400);
    expect(metadata.body.message).toMatch(/^Invalid field 'metadata': more than 1000 keys/);
    expect(await t.app.mongo.db.collection('chats').countDocuments({ chatId: 'v-many' })).toBe(0);
  });

  it("a chat's stored variables and metadata with a turn's merged in stay within the bound; turns not growing it still run", async () => {
    const named = (prefix: string, count: number, from = 0) => `{${Array.from({ length: count }, (_, i) => `"${prefix}${from + i}":${i}`).join(',')}}`;
    expect((await turn('v-grow', `"variables":${named('v', 600)},"metadata":${named('m', 600)}`)).status).toBe(200);
    const grown = await turn('v-grow', `"variables":${named('v', 600, 600)}`);
    expect(grown.status).toBe(400);
    expect(grown.body.message).toMatch(/^Invalid field 'variables': the chat would hold more than 1000 keys/);
    const metadata = await turn('v-grow', `"metadata":${named('m', 600, 600)}`);
    expect(metadata.status).toBe(400);
    expect(metadata.body.message).toMatch(/^Invalid field 'metadata': the chat would hold more than 1000 keys/);
    // Sending stored keys again, or no new ones, grows nothing.
    expect((await turn('v-grow', `"variables":${named('v', 600)},"metadata":${named('m', 600)}`)).status).toBe(200);
    const chat = await t.app.mongo.db.collection('chats').findOne({ chatId: 'v-grow' });
    expect(Object.keys(chat!.variables ?? {}).filter((key) => key.startsWith('v'))).toHaveLength(600);
    expect(await t.app.mongo.db.collection('chatitems').countDocuments({ chatId: 'v-grow' })).toBe(4);
    // A chat stored over the bound before it existed keeps answering turns that add nothing.
    await t.app.mongo.db.collection('chats').updateOne({ chatId: 'v-grow' }, { $set: { variables: JSON.parse(named('v', 1500)) } });
    expect((await turn('v-grow', `"variables":{"v1":7}`)).status).toBe(200);
    expect((await turn('v-grow', `"variables":{"new":7}`)).status).toBe(400);
  });

  it('collection metadata and an app chat config past their bounds', async () => {
    const collection = await postRaw('/core/dataset/collection/create', `{"datasetId":"${datasetId}","name":"many","metadata":${keys(1001)}}`);
    expect(collection.status).toBe(400);
    expect(collection.body.message).toMatch(/^Invalid field 'metadata': more than 1000 keys/);
    const app = await postRaw('/core/app/update', `{"appId":"${appId}","chatConfig":${keys(2001)}}`);
    expect(app.status).toBe(400);
    expect(app.body.message).toMatch(/^Invalid field 'chatConfig': more than 2000 keys/);
  });

  it("the textEditor plugin's inputs past 10,000 keys", async () => {
    for (const [url, field] of [
      ['/plugins/textEditor', 'DYNAMIC_INPUT_KEY'],
      ['/plugins/textEditor/v2', 'customInputs'],
    ]) {
      const res = await postRaw(url!, `{"text":"{{k1}}","${field}":${keys(10_001)}}`, {});
      expect(res.status, url).toBe(400);
      expect(res.body.message).toMatch(new RegExp(`^Invalid field '${field}': more than 10000 keys`));
      expect((await postRaw(url!, `{"text":"{{k1}}","${field}":${keys(10_000)}}`, {})).body).toEqual({ text: '1' });
    }
  });
});

describe('the public textEditor plugins', () => {
  it('refuse a fill adding more than 1,000,000 characters (a short body naming one value many times), naming the field', async () => {
    const value = 'x'.repeat(1000);
    const text = '{{a}}'.repeat(1010);
    for (const [url, body] of [
      ['/plugins/textEditor', { text, DYNAMIC_INPUT_KEY: { a: value } }],
      ['/plugins/textEditor/v2', { text, customInputs: { a: value } }],
    ] as const) {
      const res = await postRaw(url, JSON.stringify(body), {});
      expect(res.status, url).toBe(400);
      expect(res.body.message).toMatch(/^Invalid field 'text': filling in its variables would add more than 1000000 characters/);
    }
    // Within the bound the text is filled as before.
    const filled = await postRaw('/plugins/textEditor/v2', JSON.stringify({ text: '{{a}}'.repeat(990), customInputs: { a: value } }), {});
    expect(filled.status).toBe(200);
    expect(filled.body.text).toHaveLength(990_000);
  });
});

describe('the public plugin endpoints without their main field', () => {
  it('textEditor without text is a 400 naming it (FastGPT 4.8.10 answers {}); a null text is answered as sent', async () => {
    for (const [url, json] of [
      ['/plugins/textEditor', '{"DYNAMIC_INPUT_KEY":{"a":1}}'],
      ['/plugins/textEditor/v2', '{}'],
    ]) {
      const res = await postRaw(url!, json!, {});
      expect(res.status, url).toBe(400);
      expect(res.body.message).toBe("Invalid field 'text': missing (the text whose {{key}} placeholders are filled)");
    }
    expect(await postRaw('/plugins/textEditor/v2', '{"text":null}', {})).toEqual({ status: 200, body: { text: null } });
  });

  it('TFSwitch without input answers false, as FastGPT 4.8.10', async () => {
    expect(await postRaw('/plugins/TFSwitch', '{}', {})).toEqual({ status: 200, body: { false: false } });
    expect(await postRaw('/plugins/TFSwitch', '{"rule":"x"}', {})).toEqual({ status: 200, body: { false: false } });
    const get = await t.app.inject({ method: 'GET', url: '/api/plugins/TFSwitch' });
    expect([get.statusCode, get.json()]).toEqual([200, { false: false }]);
  });
});
