import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';
import { createApp, ok } from './apps-helpers.js';

/**
 * Catastrophic backtracking from user patterns: with JavaScript's engine `^(a+)+$` against
 * 30 a's and a '!' runs for minutes and stalls every route of both APIs. User patterns run on
 * RE2 (linear time), so the process keeps answering while such a request is served.
 */
let t: TestApp;
let base: string;
let readerToken: string;
let appId: string;

const EVIL_INPUT = `${'a'.repeat(30)}!`;
const EVIL_RULE = '/^(a+)+$/';

beforeAll(async () => {
  t = await buildTestApp();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  const owner = await createUser(t, { username: 'regex-owner', password: 'password-1' });
  await createUser(t, { username: 'regex-reader', password: 'password-1', teamId: owner.teamId, role: 'member', permission: 4 });
  const ownerToken = await login(t, 'regex-owner', 'password-1');
  readerToken = await login(t, 'regex-reader', 'password-1');
  appId = await createApp(t, ownerToken, { name: 'Shared app' });
  await ok(t, ownerToken, 'POST', '/core/app/update', { appId, defaultPermission: 4 });
});
afterAll(() => t.close());

/** Sends the attack, then asks /healthz while it is being served; returns both timings. */
async function healthzDuring(attack: () => Promise<Response>): Promise<{ healthzMs: number; attack: Response }> {
  const pending = attack();
  await new Promise((resolve) => setTimeout(resolve, 20));
  const started = performance.now();
  const health = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(10_000) });
  const healthzMs = performance.now() - started;
  expect(health.status).toBe(200);
  return { healthzMs, attack: await pending };
}

describe('user regular expressions', () => {
  it('an anonymous TFSwitch rule cannot freeze the process', async () => {
    const { healthzMs, attack } = await healthzDuring(() =>
      fetch(`${base}/api/plugins/TFSwitch/index`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ input: EVIL_INPUT, rule: EVIL_RULE }) }),
    );
    expect(healthzMs).toBeLessThan(300);
    expect(attack.status).toBe(200);
    // The rule does not match (the '!' breaks it), so the input counts as true.
    expect(await attack.json()).toEqual({ true: true });
  });

  it("a read-only member's ifElse reg condition in chatTest cannot freeze the process", async () => {
    const nodes = [
      { nodeId: 'start', flowNodeType: 'workflowStart', name: 'Start', inputs: [], outputs: [{ id: 'userChatInput', key: 'userChatInput', valueType: 'string' }] },
      {
        nodeId: 'if',
        flowNodeType: 'ifElseNode',
        name: 'Branch',
        inputs: [{ key: 'ifElseList', value: [{ condition: 'AND', list: [{ variable: ['start', 'userChatInput'], condition: 'reg', value: EVIL_RULE }] }] }],
        outputs: [{ id: 'ifElseResult', key: 'ifElseResult' }],
      },
      { nodeId: 'yes', flowNodeType: 'answerNode', name: 'Yes', inputs: [{ key: 'text', value: 'matched' }], outputs: [] },
      { nodeId: 'no', flowNodeType: 'answerNode', name: 'No', inputs: [{ key: 'text', value: 'no match' }], outputs: [] },
    ];
    const edges = [
      { source: 'start', sourceHandle: 'start-source-right', target: 'if', targetHandle: 'if-target-left' },
      { source: 'if', sourceHandle: 'if-source-IF', target: 'yes', targetHandle: 'yes-target-left' },
      { source: 'if', sourceHandle: 'if-source-ELSE', target: 'no', targetHandle: 'no-target-left' },
    ];
    const { healthzMs, attack } = await healthzDuring(() =>
      fetch(`${base}/api/core/chat/chatTest`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', token: readerToken },
        body: JSON.stringify({ appId, nodes, edges, messages: [{ role: 'user', content: EVIL_INPUT }] }),
      }),
    );
    expect(healthzMs).toBeLessThan(300);
    expect(attack.status).toBe(200);
    const body = await attack.text();
    expect(body).toContain('no match');
    expect(body).not.toContain('"matched"');
  });
});
