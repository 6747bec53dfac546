import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';
import { createApp, ok } from './apps-helpers.js';

/**
 * Catastrophic backtracking from user patterns: with JavaScript's engine `^(a+)+$` against
 * 30 a's and a '!' runs for minutes and stalls every route of both APIs. User patterns run on
 * RE2 (linear time, src/domain/user-regex.ts), so such a request is answered like any other.
 * The tests check that engine by what it refuses: a backreference or a lookahead, which only a
 * backtracking engine runs, is not a usable pattern (TFSwitch then compares the rule as plain
 * text, an ifElse `reg` condition is false). A backtracking engine would match them; the
 * catastrophic pattern is only sent once that is established.
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

const tfSwitch = (input: string, rule: string) =>
  fetch(`${base}/api/plugins/TFSwitch/index`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ input, rule }) });

describe('user regular expressions', () => {
  it('an anonymous TFSwitch rule cannot freeze the process', async () => {
    // A rule RE2 refuses is compared as plain text; a backtracking engine would match it.
    for (const [input, rule] of [
      ['aa', '/^(a)\\1$/'],
      ['ab', '/^(?=a)ab$/'],
    ] as const) {
      const probe = await tfSwitch(input, rule);
      expect(probe.status).toBe(200);
      expect(await probe.json(), `${rule} is not run by a backtracking engine`).toEqual({ true: true });
    }
    // A pattern RE2 runs still matches, and the catastrophic one is answered.
    expect(await (await tfSwitch('aaa', '/^(a+)+$/')).json()).toEqual({ false: false });
    const attack = await tfSwitch(EVIL_INPUT, EVIL_RULE);
    expect(attack.status).toBe(200);
    // The rule does not match (the '!' breaks it), so the input counts as true.
    expect(await attack.json()).toEqual({ true: true });
  });

  it("a read-only member's ifElse reg condition in chatTest cannot freeze the process", async () => {
    const chatTest = (rule: string, content: string) =>
      fetch(`${base}/api/core/chat/chatTest`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', token: readerToken },
        body: JSON.stringify({ appId, ...branchOn(rule), messages: [{ role: 'user', content }] }),
      });
    const branch = async (rule: string, content: string) => {
      const response = await chatTest(rule, content);
      expect(response.status).toBe(200);
      const body = await response.text();
      // The answer node's text, exactly one of the two.
      const answers = ['matched', 'no match'].filter((text) => body.includes(`"${text}"`));
      expect(answers, body).toHaveLength(1);
      return answers[0];
    };
    // A condition RE2 refuses is false; a backtracking engine would match it.
    expect(await branch('/^(a)\\1$/', 'aa'), 'backreference is not run').toBe('no match');
    expect(await branch('/^(?=a)ab$/', 'ab'), 'lookahead is not run').toBe('no match');
    // A pattern RE2 runs still matches, and the catastrophic one is answered.
    expect(await branch(EVIL_RULE, 'aaa')).toBe('matched');
    expect(await branch(EVIL_RULE, EVIL_INPUT)).toBe('no match');
  });
});

/** A chatTest graph: start → ifElse (the user input against `rule`) → "matched" or "no match". */
function branchOn(rule: string) {
  const nodes = [
    { nodeId: 'start', flowNodeType: 'workflowStart', name: 'Start', inputs: [], outputs: [{ id: 'userChatInput', key: 'userChatInput', valueType: 'string' }] },
    {
      nodeId: 'if',
      flowNodeType: 'ifElseNode',
      name: 'Branch',
      inputs: [{ key: 'ifElseList', value: [{ condition: 'AND', list: [{ variable: ['start', 'userChatInput'], condition: 'reg', value: rule }] }] }],
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
  return { nodes, edges };
}
