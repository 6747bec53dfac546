import { describe, expect, it } from 'vitest';
import { buildNodeParams } from '../../src/domain/workflow/interpolate.js';
import type { NodeRunContext, NodeRunner, RuntimeNode } from '../../src/domain/workflow/types.js';
import { SECRET_MASK } from '../../src/platform/chat/workflow-nodes/credential-text.js';
import { createExtraRunners } from '../../src/platform/chat/workflow-nodes/extra-nodes.js';
import { createHttpRunners } from '../../src/platform/chat/workflow-nodes/http-node.js';
import type { NodeDeps } from '../../src/platform/chat/workflow-nodes/node-deps.js';
import { ShownSecrets } from '../../src/platform/chat/workflow-nodes/shown-secrets.js';

/**
 * A service's answer in a node's run detail: the values of its credential-named fields are
 * masked whatever they look like (as the request's are), and wherever else the detail shows
 * them; what the node hands on to later nodes is the answer as received.
 */

/** An OAuth-style answer whose credentials have no credential shape (no digits-and-length token, no known prefix). */
const TOKEN_ANSWER = { access_token: 'abc123xyz', refresh_token: 'refreshme', token_type: 'bearer', expires_in: 3600, user: { name: 'ada', password: 'pw-7' } };
const MASKED_TOKEN_ANSWER = { access_token: SECRET_MASK, refresh_token: SECRET_MASK, token_type: 'bearer', expires_in: 3600, user: { name: 'ada', password: SECRET_MASK } };

describe('ShownSecrets.show on an answer', () => {
  it('masks credential-named fields at any depth, whatever their value looks like, without touching the answer', () => {
    const answer = structuredClone(TOKEN_ANSWER);
    expect(new ShownSecrets().show(answer)).toEqual(MASKED_TOKEN_ANSWER);
    expect(answer).toEqual(TOKEN_ANSWER);
    // Names of every style, and values of every kind but empty ones.
    const shown = new ShownSecrets().show({ apiKey: 12345678, 'X-Api-Key': ['k1', 'k2'], secret: { a: 1 }, authorization: 'plain', token: '', password: null, note: 'hi' });
    expect(shown).toEqual({ apiKey: SECRET_MASK, 'X-Api-Key': SECRET_MASK, secret: SECRET_MASK, authorization: SECRET_MASK, token: '', password: null, note: 'hi' });
  });

  it('masks those values where the answer echoes them, before the field that names them as after it', () => {
    const shown = new ShownSecrets().show({ message: 'your token is abc123xyz', access_token: 'abc123xyz', copy: ['abc123xyz'] });
    expect(shown).toEqual({ message: `your token is ${SECRET_MASK}`, access_token: SECRET_MASK, copy: [SECRET_MASK] });
    // A short one where it stands whole only, not inside words.
    expect(new ShownSecrets().show({ echo: 'pw-7', password: 'pw-7', word: 'pw-7s' })).toEqual({ echo: SECRET_MASK, password: SECRET_MASK, word: 'pw-7s' });
    const secrets = new ShownSecrets();
    expect(secrets.show({ data: { session: { password: 'hunter2x' } } })).toEqual({ data: { session: { password: SECRET_MASK } } });
    // And in what the run shows after it.
    expect(secrets.show('logged in with hunter2x')).toBe(`logged in with ${SECRET_MASK}`);
  });

  it('masks the credential-named pairs of a JSON text it shows (a log, an answer that was a JSON string)', () => {
    const log = 'got {"access_token": "abc123xyz", "scope": "read"}\nthen abc123xyz again';
    expect(new ShownSecrets().show(log)).toBe(`got {"access_token": "${SECRET_MASK}", "scope": "read"}\nthen ${SECRET_MASK} again`);
    // Prose naming a credential is not a pair.
    const prose = 'Token: see below. password=reset requested';
    expect(new ShownSecrets().show(prose)).toBe(prose);
  });

  it('masks a credential-named field nested deeper than it walks', () => {
    let deep: unknown = { access_token: 'abc123xyz', n: 1 };
    let expected: unknown = { access_token: SECRET_MASK, n: 1 };
    for (let i = 0; i < 200; i++) {
      deep = { level: deep };
      expected = { level: expected };
    }
    expect(new ShownSecrets().show(deep)).toEqual(expected);
  });

  it('answers an answer with no credential name as it is (not copied)', () => {
    const answer = { data: [{ name: 'ada', max_tokens: 10, keyword: 'sea' }] };
    expect(new ShownSecrets().show(answer)).toBe(answer);
  });

  // Each is 100 KB or more: a regex that backtracked on them would hold the test past its time limit.
  it('long hostile JSON-like texts come back masked, or as they were', () => {
    expect(new ShownSecrets().show('"token": "v", '.repeat(8_000))).toBe(`"token": "${SECRET_MASK}", `.repeat(8_000));
    for (const text of [`"password": "${'\\"'.repeat(50_000)}`, `${'"'.repeat(50_000)}${' '.repeat(50_000)}`, `"${'a'.repeat(99)}`.repeat(1_000), `"k": "${'a'.repeat(100)}`.repeat(1_000)]) {
      expect(new ShownSecrets().show(text)).toBe(text);
    }
  });
});

function nodeOf(flowNodeType: string, inputs: RuntimeNode['inputs'], outputs: RuntimeNode['outputs'] = []): RuntimeNode {
  return { nodeId: 'n', flowNodeType, name: 'Node', inputs, outputs };
}

async function run(runner: NodeRunner, node: RuntimeNode) {
  const params = buildNodeParams(node, [node], {});
  const context = { node, params, variables: {}, histories: [], query: [], runtimeNodes: [node], runtimeEdges: [], mode: 'chat', stream: false, emit: () => undefined, isAborted: () => false, runBudget: { remaining: 10 } };
  return (await runner(context as unknown as NodeRunContext)) as { outputs: Record<string, unknown>; responseData: Record<string, unknown>; toolResponses?: unknown };
}

function depsAnswering(status: number, answer: unknown): NodeDeps {
  const reply = async () => ({ status, text: JSON.stringify(answer) });
  return { teamId: 't', appId: 'a', chatId: 'c', responseChatItemId: 'r', signal: new AbortController().signal, customFeedbacks: [], httpCall: reply, runSandbox: reply } as unknown as NodeDeps;
}

describe("a node's run detail of a service's answer", () => {
  it("an HTTP node shows its answer's credentials masked and hands on the answer as received", async () => {
    const { httpRequest468 } = createHttpRunners(depsAnswering(200, TOKEN_ANSWER));
    const node = nodeOf(
      'httpRequest468',
      [
        { key: 'system_httpMethod', value: 'POST' },
        { key: 'system_httpReqUrl', value: 'http://auth.test/token' },
      ],
      [{ id: 'access_token', key: 'access_token', valueType: 'string', type: 'dynamic' }],
    );
    const { outputs, responseData, toolResponses } = await run(httpRequest468!, node);
    expect(responseData.httpResult).toEqual(MASKED_TOKEN_ANSWER);
    expect(outputs.httpRawResponse).toEqual(TOKEN_ANSWER);
    expect(outputs.access_token).toBe('abc123xyz');
    expect(toolResponses).toEqual({ access_token: 'abc123xyz' });
  });

  it("an HTTP node's failed call shows the error answer's credentials masked, its error output keeps them", async () => {
    const { httpRequest468 } = createHttpRunners(depsAnswering(401, { message: 'expired', refresh_token: 'refreshme' }));
    const node = nodeOf('httpRequest468', [
      { key: 'system_httpMethod', value: 'GET' },
      { key: 'system_httpReqUrl', value: 'http://auth.test/me' },
    ]);
    const { outputs, responseData } = await run(httpRequest468!, node);
    expect((responseData.httpResult as { error: { data: unknown } }).error.data).toEqual({ message: 'expired', refresh_token: SECRET_MASK });
    expect((outputs.error as { data: unknown }).data).toEqual({ message: 'expired', refresh_token: 'refreshme' });
  });

  it('a Laf node shows its answer masked the same way', async () => {
    const { lafModule } = createHttpRunners(depsAnswering(200, TOKEN_ANSWER));
    const { outputs, responseData } = await run(lafModule!, nodeOf('lafModule', [{ key: 'system_httpReqUrl', value: 'http://laf.test/fn' }]));
    expect(responseData.httpResult).toEqual(MASKED_TOKEN_ANSWER);
    expect(outputs.httpRawResponse).toEqual(TOKEN_ANSWER);
  });

  it("a code node shows its return's credentials masked, in its log too, and hands on the return as it is", async () => {
    const returned = { apiKey: 'k-plain', result: 'ok' };
    const { code } = createExtraRunners(depsAnswering(200, { success: true, data: { codeReturn: returned, log: 'made {"apiKey": "k-plain"}' } }));
    const { outputs, responseData } = await run(code!, nodeOf('code', [{ key: 'code', value: 'function main() {}' }]));
    expect(responseData.customOutputs).toEqual({ apiKey: SECRET_MASK, result: 'ok' });
    expect(responseData.codeLog).toBe(`made {"apiKey": "${SECRET_MASK}"}`);
    expect(outputs).toMatchObject({ apiKey: 'k-plain', result: 'ok', system_rawResponse: returned });
  });
});
