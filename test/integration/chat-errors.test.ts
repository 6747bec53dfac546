/**
 * How a failed chat run reaches the client (issue 11 step 5): a node refusing its inputs is a
 * 400, a bug (a plain Error) is a 500 carrying the request id and logged, never a 400 echoing it.
 */
import { MongoNetworkError } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { createPublishedApp, sseFrames } from './chat-helpers.js';

let t: TestApp;
let tok: string;
let pluginAppId: string;
let noUrlAppId: string;

const start = { nodeId: 'start', flowNodeType: 'workflowStart', name: 'Start', inputs: [], outputs: [{ id: 'userChatInput', key: 'userChatInput', valueType: 'string' }] };
const graphWith = (node: Record<string, unknown>) => ({
  nodes: [start, node],
  edges: [{ source: 'start', sourceHandle: 'start-source-right', target: node.nodeId, targetHandle: `${node.nodeId}-target-left` }],
  chatConfig: {},
});

const completions = (payload: Record<string, unknown>) => t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: authHeaders(tok), payload });

beforeAll(async () => {
  t = await buildTestApp();
  await createUser(t, { username: 'alice', password: 'password-a1' });
  tok = await login(t, 'alice', 'password-a1');
  pluginAppId = await createPublishedApp(
    t,
    tok,
    'Clock',
    graphWith({ nodeId: 'clock', flowNodeType: 'pluginModule', name: 'Current time', pluginId: 'community-getTime', inputs: [], outputs: [{ id: 'time', key: 'time', type: 'static', valueType: 'string' }] }),
  );
  noUrlAppId = await createPublishedApp(
    t,
    tok,
    'No URL',
    graphWith({ nodeId: 'call', flowNodeType: 'httpRequest468', name: 'Call', inputs: [{ key: 'system_httpReqUrl', valueType: 'string', value: '' }], outputs: [] }),
  );
});

afterAll(async () => {
  await t?.close();
});

describe('errors of a chat run', () => {
  it('a bug inside a node is a 500 with the request id, logged; its message is not sent', async () => {
    const runSystemPlugin = t.app.apps.runSystemPlugin;
    t.app.apps.runSystemPlugin = async () => {
      throw new Error('secret internals: cannot read property of undefined');
    };
    try {
      const res = await completions({ appId: pluginAppId, messages: [{ role: 'user', content: 'time?' }] });
      expect(res.statusCode).toBe(500);
      expect(res.json().message).toMatch(/^Internal error \(request id .+\)$/);
      expect(res.body).not.toContain('secret internals');

      const streamed = await completions({ appId: pluginAppId, stream: true, detail: true, messages: [{ role: 'user', content: 'time?' }] });
      const error = sseFrames(streamed.body).find((frame) => frame.event === 'error');
      expect(JSON.parse(error!.data)).toMatchObject({ code: 500, message: expect.stringMatching(/^Internal error \(request id/) });
      expect(streamed.body).not.toContain('secret internals');
      expect(t.logs()).toContain('secret internals: cannot read property of undefined');
      expect(t.logs()).toContain('chat completion failed while streaming');
    } finally {
      t.app.apps.runSystemPlugin = runSystemPlugin;
    }
    const healed = await completions({ appId: pluginAppId, messages: [{ role: 'user', content: 'time?' }] });
    expect(healed.statusCode, healed.body).toBe(200);
  });

  it('a database outage met while streaming is a 503 frame, logged as one readable warning (not the driver error and its topology)', async () => {
    const runSystemPlugin = t.app.apps.runSystemPlugin;
    t.app.apps.runSystemPlugin = async () => {
      throw new MongoNetworkError('connect ECONNREFUSED 10.0.0.9:27017');
    };
    try {
      const streamed = await completions({ appId: pluginAppId, stream: true, messages: [{ role: 'user', content: 'time?' }] });
      const error = sseFrames(streamed.body).find((frame) => frame.event === 'error');
      expect(JSON.parse(error!.data)).toMatchObject({ code: 503, statusText: 'serviceUnavailable' });
      const line = t
        .logs()
        .split('\n')
        .filter((text) => text.includes(streamed.headers['x-request-id'] as string) && text.includes('failed while streaming'))
        .map((text) => JSON.parse(text) as Record<string, unknown>)[0];
      expect(line).toMatchObject({ level: 40, msg: 'chat completion failed while streaming', dbError: 'MongoNetworkError: connect ECONNREFUSED 10.0.0.9:27017' });
    } finally {
      t.app.apps.runSystemPlugin = runSystemPlugin;
    }
  });

  it("a node refusing its input stays a 400 with the reference's message", async () => {
    const res = await completions({ appId: noUrlAppId, messages: [{ role: 'user', content: 'x' }] });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 507002, statusText: 'missingParams', message: 'Http url is empty' });
  });

  it('a refusal met while streaming is logged with its reason in a field of its own (a second `msg` key was dropped by JSON readers)', async () => {
    const streamed = await completions({ appId: noUrlAppId, stream: true, messages: [{ role: 'user', content: 'x' }] });
    const frame = sseFrames(streamed.body).find((each) => each.event === 'error');
    expect(JSON.parse(frame!.data)).toMatchObject({ code: 507002, message: 'Http url is empty', error: { message: 'Http url is empty' } });
    const line = t
      .logs()
      .split('\n')
      .filter((text) => text.includes(streamed.headers['x-request-id'] as string) && text.includes('refused while streaming'))
      .map((text) => JSON.parse(text) as Record<string, unknown>)[0];
    expect(line).toMatchObject({ level: 30, msg: 'chat completion refused while streaming', statusText: 'missingParams', reason: 'Http url is empty' });
  });

  it('chat init without an app keeps its catalogue entry (code 501)', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/core/chat/init', headers: authHeaders(tok) });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 501, statusText: 'missingParams', message: "You don't have an app yet (missing field 'appId')" });
  });
});
