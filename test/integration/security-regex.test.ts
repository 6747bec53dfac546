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
 *
 * Linear is not cheap: RE2JS steps every instruction of a pattern's program over every character,
 * and `[^x]{1000}[^ab]` (15 characters) is a 1,000-instruction program. Unbounded, the anonymous
 * TFSwitch endpoint spent 3.8 s on one 100 KB request and 35 s on a rule of 2,000 such lines, and
 * an ifElse `reg` condition in a read-only member's chatTest did the same: every route of the
 * process waited. Each call now pays its regex work from a budget (src/domain/user-regex.ts) and
 * is refused, naming the field, before it would overdraw it. The inputs below would take far
 * longer than the test timeout if they were run.
 */
let t: TestApp;
let base: string;
let readerToken: string;
let appId: string;

const EVIL_INPUT = `${'a'.repeat(30)}!`;
const EVIL_RULE = '/^(a+)+$/';
/** A 1,003-instruction program that never matches `abab…`, so every line of a rule is tried. */
const COSTLY = '/[^x]{1000}[^ab]/';

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
        body: JSON.stringify({ appId, ...branchOn([{ value: rule }], 'AND'), messages: [{ role: 'user', content }] }),
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

/** The answer to a rule TFSwitch runs, which must be a 200. */
async function answer(input: string, rule: string) {
  const response = await tfSwitch(input, rule);
  expect(response.status, await response.clone().text()).toBe(200);
  return response.json();
}

describe('the regex work of one request is bounded', () => {
  it('refuses a TFSwitch pattern too large for a 100 KB input with a 400 naming the rule line; ordinary rules still answer', async () => {
    // About 100,000 × 1,003 steps: 3.8 s unbounded, 35 s for the ~900 KB input.
    for (const input of ['ab'.repeat(50_000), 'ab'.repeat(450_000)]) {
      const response = await tfSwitch(input, COSTLY);
      expect(response.status).toBe(400);
      const body = (await response.json()) as { message: string };
      expect(body.message).toMatch(/^Invalid field 'rule': line 1: testing \/\[\^x\]\{1000\}\[\^ab\]\/ \(1,003 instructions\) against [\d,]+ characters would take/);
    }
    // A long model answer (44 KB) against the lines switches are written with.
    const long = `Sorry, ${'I cannot answer that. '.repeat(2000)}`;
    expect(await answer(long, '/^sorry/i')).toEqual({ false: false });
    expect(await answer(long, 'none\n/^\\s*$/\n/无法回答|不知道/\n/^(yes|no)$/i')).toEqual({ true: true });
    expect(await answer('13812345678', '/^((\\+|00)86)?1[3-9]\\d{9}$/')).toEqual({ false: false });
    expect(await answer('a'.repeat(100), '/^a{1,100}$/')).toEqual({ false: false });
  });

  it('refuses a TFSwitch rule of 2,000 costly lines at the line that overdraws the budget', async () => {
    // 35 s unbounded (the audit's 39 KB body); 20,000 lines would be minutes.
    for (const lines of [2000, 20_000]) {
      const response = await tfSwitch('ab'.repeat(500), Array(lines).fill(COSTLY).join('\n'));
      expect(response.status).toBe(400);
      const body = (await response.json()) as { message: string };
      expect(body.message).toMatch(/^Invalid field 'rule': line 2: testing .* \(1,[\d,]+ spent already\): shorten the text or the pattern, or use fewer patterns$/);
    }
    // A line that matches answers before a costly line after it is reached.
    expect(await answer('ab'.repeat(50_000), `/^ab/\n${COSTLY}`)).toEqual({ false: false });
    // Fifty ordinary patterns against a short input are well within the budget.
    const fifty = Array.from({ length: 50 }, (_, i) => `/^stop${i}\\b/i`).join('\n');
    expect(await answer('go on', fifty)).toEqual({ true: true });
  });

  it("bounds a read-only member's ifElse reg conditions in chatTest: 400 naming the branch and condition", async () => {
    const chatTest = (conditions: { value: string }[], join: 'AND' | 'OR', content: string) =>
      fetch(`${base}/api/core/chat/chatTest`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', token: readerToken },
        body: JSON.stringify({ appId, ...branchOn(conditions, join), messages: [{ role: 'user', content }] }),
      });
    const refusal = async (response: Response) => {
      expect(response.status).toBe(400);
      const text = await response.text();
      const frame = /event: error\ndata: (.*)\n/.exec(text);
      expect(frame, text).not.toBeNull();
      return (JSON.parse(frame?.[1] ?? '{}') as { message: string }).message;
    };
    // One condition against a 100 KB question (3.8 s unbounded).
    expect(await refusal(await chatTest([{ value: COSTLY }], 'AND', 'ab'.repeat(50_000)))).toMatch(/^Node 'Branch' \(ifElseNode\): ifElse branch IF, condition 1 \(reg\): testing .*1,003 instructions/);
    // 5,000 conditions against a 1,000-character question (over a minute unbounded).
    const many = Array.from({ length: 5000 }, () => ({ value: COSTLY }));
    expect(await refusal(await chatTest(many, 'OR', 'ab'.repeat(500)))).toMatch(/^Node 'Branch' \(ifElseNode\): ifElse branch IF, condition 2 \(reg\): testing .*spent already/);

    // Ordinary conditions still choose their branch.
    const answer = async (conditions: { value: string }[], join: 'AND' | 'OR', content: string) => {
      const response = await chatTest(conditions, join, content);
      expect(response.status).toBe(200);
      const body = await response.text();
      const answers = ['matched', 'no match'].filter((text) => body.includes(`"${text}"`));
      expect(answers, body).toHaveLength(1);
      return answers[0];
    };
    const question = `Order 12345: ${'please ship it soon. '.repeat(2000)}`;
    expect(await answer([{ value: '/^order \\d+/i' }, { value: 'ship' }], 'AND', question)).toBe('matched');
    expect(await answer([{ value: '/^refund/i' }, { value: '/cancel(led)?/' }], 'OR', question)).toBe('no match');
  });
});

/** A chatTest graph: start → ifElse (the user input against each pattern, joined by `join`) → "matched" or "no match". */
function branchOn(conditions: { value: string }[], join: 'AND' | 'OR') {
  const list = conditions.map(({ value }) => ({ variable: ['start', 'userChatInput'], condition: 'reg', value }));
  const nodes = [
    { nodeId: 'start', flowNodeType: 'workflowStart', name: 'Start', inputs: [], outputs: [{ id: 'userChatInput', key: 'userChatInput', valueType: 'string' }] },
    {
      nodeId: 'if',
      flowNodeType: 'ifElseNode',
      name: 'Branch',
      inputs: [{ key: 'ifElseList', value: [{ condition: join, list }] }],
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
