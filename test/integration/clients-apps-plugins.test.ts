import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selfCallHeaders } from '../../src/infra/self-call-token.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';

/**
 * FastGPT's plugin templates call the legacy plugins at `/api/plugins/<name>` (no `/index`), as
 * the HTTP node of an imported workflow sends them. Both forms answer, the same way.
 */
let t: TestApp;

beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(() => t.close());

const cases: [string, Record<string, unknown>, unknown][] = [
  ['/api/plugins/TFSwitch', { input: 'hello world', rule: 'world' }, { true: true }],
  ['/api/plugins/TFSwitch', { input: 'bye now', rule: 'other\n/^bye/' }, { false: false }],
  ['/api/plugins/textEditor', { text: 'Hi {{name}}', DYNAMIC_INPUT_KEY: { name: 'Ann' } }, { text: 'Hi Ann' }],
  ['/api/plugins/textEditor/v2', { text: 'Hi {{name}}', customInputs: { name: 'Bo' } }, { text: 'Hi Bo' }],
  ['/api/plugins/customFeedback', { appId: 'a', defaultFeedback: '', customFeedback: '' }, { response: '' }],
  ['/api/plugins/customFeedback', { appId: 'a', customFeedback: 'nice' }, { response: expect.stringContaining('nice') }],
  ['/api/plugins/customFeedback/v2', { appId: 'a', customFeedback: '' }, {}],
  ['/api/plugins/customFeedback/v2', { appId: 'a', customFeedback: 'got {{x}}', customInputs: { x: 'it' } }, { answerText: expect.stringContaining('got it'), text: 'got it' }],
];

describe('legacy plugin endpoints without /index', () => {
  it.each(cases)('POST %s answers raw JSON as /index does', async (url, payload, expected) => {
    // customFeedback answers only this service's own workflow runs (they send the self-call proof).
    // A run that saves no chat (chatTest, debug) of app 'a': its proof names no chat.
    const headers = selfCallHeaders(t.config.TOKEN_KEY, { teamId: new ObjectId().toHexString(), appId: 'a', chatId: '', dataId: '' });
    const bare = await t.app.inject({ method: 'POST', url, payload, headers });
    expect(bare.statusCode, bare.body).toBe(200);
    expect(bare.headers['content-type']).toContain('application/json');
    expect(bare.json()).toEqual(expected);
    const indexed = await t.app.inject({ method: 'POST', url: `${url}/index`, payload, headers });
    expect(indexed.statusCode).toBe(200);
    expect(indexed.json()).toEqual(bare.json());
  });

  it('validates the bare paths like the /index ones (400 naming the field, no session needed)', async () => {
    const bad = await t.app.inject({ method: 'POST', url: '/api/plugins/textEditor', payload: { text: 'x', DYNAMIC_INPUT_KEY: 'not an object' } });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain('DYNAMIC_INPUT_KEY');
    const get = await t.app.inject({ method: 'GET', url: '/api/plugins/TFSwitch?input=abc&rule=b' });
    expect(get.statusCode).toBe(200);
    expect(get.json()).toEqual({ true: true });
  });
});
