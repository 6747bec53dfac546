/**
 * What one workflow turn may cost: node lookups by id, substitution in one pass within a budget,
 * graph size, history rounds, and the pause between node checks.
 */
import { describe, expect, it } from 'vitest';
import { dispatchWorkflow, WorkflowError } from '../../src/domain/workflow/dispatch.js';
import { MAX_GRAPH_EDGES, MAX_GRAPH_NODES, MAX_NODE_PARTS } from '../../src/domain/workflow/graph-limits.js';
import { buildNodeParams, MAX_INTERPOLATED_GROWTH, fillNodeText, replaceVariables, TextTooLongError } from '../../src/domain/workflow/interpolate.js';
import { historyLoadLimit, MAX_HISTORY_ROUNDS } from '../../src/domain/workflow/messages.js';
import { renderQuotePrompt, renderQuotes } from '../../src/domain/workflow/prompts.js';
import { pureRunners } from '../../src/domain/workflow/pure-runners.js';
import type { NodeRunContext, NodeRunner, RuntimeEdge, RuntimeNode } from '../../src/domain/workflow/types.js';
import { createHttpRunners } from '../../src/platform/chat/workflow-nodes/http-node.js';
import type { NodeDeps } from '../../src/platform/chat/workflow-nodes/node-deps.js';

const node = (nodeId: string, flowNodeType: string, extra: Partial<RuntimeNode> = {}): RuntimeNode => ({ nodeId, flowNodeType, name: nodeId, inputs: [], outputs: [], ...extra });
const edge = (source: string, target: string): RuntimeEdge => ({ source, sourceHandle: `${source}-source-right`, target, targetHandle: `${target}-target-left`, status: 'waiting' });

function run(nodes: RuntimeNode[], edges: RuntimeEdge[], runners: Record<string, NodeRunner> = {}, extra: { variables?: Record<string, unknown>; pause?: () => Promise<void> } = {}) {
  return dispatchWorkflow({
    nodes,
    edges,
    variables: extra.variables ?? {},
    histories: [],
    query: [{ type: 'text', text: { content: 'hi' } }],
    runners: { ...pureRunners, ...runners },
    mode: 'chat',
    newId: () => 'r',
    pause: extra.pause,
  });
}

/** The nodes as a list that counts how many of its items are read (a search reads them one by one). */
function countingList(nodes: RuntimeNode[]): { list: RuntimeNode[]; reads: () => number } {
  let reads = 0;
  const list = new Proxy(nodes, {
    get(target, property, receiver) {
      if (typeof property === 'string' && /^\d+$/.test(property)) reads += 1;
      return Reflect.get(target, property, receiver);
    },
  });
  return { list, reads: () => reads };
}

describe('node lookups', () => {
  it('a node looping on itself with many references reads the node list a few times per turn, not once per reference and run', async () => {
    const fillers = Array.from({ length: 500 }, (_, i) => node(`n${i}`, 'emptyNode'));
    const inputs = Array.from({ length: MAX_NODE_PARTS }, () => ({ key: 'k', value: ['zz', 'o'] }));
    const looping = node('E', 'emptyNode', { inputs });
    const { list, reads } = countingList([node('start', 'workflowStart', { isEntry: true }), looping, ...fillers]);
    let runs = 0;
    await run(list, [edge('start', 'E'), edge('E', 'E')], {
      emptyNode: async () => {
        runs += 1;
        return {};
      },
    });
    expect(runs).toBe(199);
    // Searching the list per reference read 200 inputs x 502 nodes x 199 runs (about 20 million).
    expect(reads()).toBeLessThan(10 * list.length);
  });

  it('references and {{$node.output$}} still find their nodes', () => {
    const source = node('src', 'x', { outputs: [{ id: 'o', key: 'k', value: 'Oslo' }] });
    const target = node('t', 'x', { inputs: [{ key: 'a', value: ['src', 'o'] }, { key: 'b', value: 'in {{$src.k$}}' }] });
    expect(buildNodeParams(target, [target, source], {})).toMatchObject({ a: 'Oslo', b: 'in Oslo' });
    expect(buildNodeParams(target, new Map([['src', source]]), {})).toMatchObject({ a: 'Oslo', b: 'in Oslo' });
  });
});

describe('variable substitution', () => {
  it('fills each placeholder once: a value holding another placeholder is inserted as written', () => {
    expect(replaceVariables('{{a}}', { a: '{{b}}', b: 'B' })).toBe('{{b}}');
    expect(replaceVariables('{{b}}/{{a}}', { b: 'B', a: '{{b}}' })).toBe('B/{{b}}');
    expect(replaceVariables('{{{a}}}', { a: 'A' })).toBe('{A}');
    expect(replaceVariables('{{toString}} {{a}}', { a: '$&' })).toBe('{{toString}} $&');
  });

  it('nested variables do not multiply: the 1 KB request of the review answers what it wrote', async () => {
    const variables: Record<string, unknown> = { v6: 'xxxxxxxx' };
    for (let i = 0; i < 6; i++) variables[`v${i}`] = `{{v${i + 1}}}`.repeat(16);
    expect(replaceVariables('{{v0}}', variables)).toBe('{{v1}}'.repeat(16));
    const answer = node('answer', 'answerNode', { inputs: [{ key: 'text', value: '{{v0}}' }] });
    const result = await run([node('start', 'workflowStart', { isEntry: true }), answer], [edge('start', 'answer')], {}, { variables });
    expect(result.assistantResponses).toEqual([{ type: 'text', text: { content: `\n${'{{v1}}'.repeat(16)}` } }]);
  });

  it('what substitution adds is capped: a clear error, never the long text', () => {
    const big = 'x'.repeat(5000);
    expect(replaceVariables('{{v}}'.repeat(150), { v: big })).toHaveLength(150 * 5000);
    expect(() => replaceVariables('{{v}}'.repeat(300), { v: big })).toThrow(TextTooLongError);
    expect(() => fillNodeText('{{$VARIABLE_NODE_ID.v$}}'.repeat(300), [], { v: big })).toThrow(TextTooLongError);
    // A text that is long by itself is not the substitution's doing.
    const long = 'y'.repeat(MAX_INTERPOLATED_GROWTH + 10);
    expect(replaceVariables(`${long}{{v}}`, { v: 'z' })).toBe(`${long}z`);
  });

  it("one budget for all of a node's inputs", () => {
    const inputs = Array.from({ length: 3 }, (_, i) => ({ key: `t${i}`, value: '{{v}}'.repeat(80) }));
    const params = buildNodeParams(node('one', 'x', { inputs: inputs.slice(0, 2) }), [], { v: 'x'.repeat(5000) });
    expect(params.t1).toHaveLength(400_000);
    expect(() => buildNodeParams(node('many', 'x', { inputs }), [], { v: 'x'.repeat(5000) })).toThrow(TextTooLongError);
  });

  it('quote templates are filled within the same cap', () => {
    const quote = { q: 'q'.repeat(3000) };
    expect(renderQuotes([quote], '{{q}}|{{a}}', 1e9)).toBe(`${quote.q}|`);
    expect(() => renderQuotes([quote], '{{q}}'.repeat(1000), 1e9)).toThrow(TextTooLongError);
    expect(() => renderQuotePrompt('{{quote}}'.repeat(1000), 'x'.repeat(3000), 'why')).toThrow(TextTooLongError);
  });

  it('a node whose texts pass the cap fails the turn naming the node, as other node failures do', async () => {
    const editor = node('editor', 'textEditor', { name: 'Joiner', inputs: [{ key: 'system_textareaInput', value: '{{v}}'.repeat(300) }] });
    const run1 = run([node('start', 'workflowStart', { isEntry: true }), editor], [edge('start', 'editor')], {}, { variables: { v: 'x'.repeat(5000) } });
    await expect(run1).rejects.toThrow(WorkflowError);
    await expect(run1).rejects.toThrow(/^Node 'Joiner' \(textEditor\): filling in its variables would add more than 1000000 characters/);
  });

  it('variableUpdate fills its texts in one pass too', async () => {
    const update = node('update', 'variableUpdate', {
      inputs: [{ key: 'updateList', value: [{ variable: ['VARIABLE_NODE_ID', 'out'], value: ['', '{{a}}'], valueType: 'string', renderType: 'input' }] }],
    });
    const result = await run([node('start', 'workflowStart', { isEntry: true }), update], [edge('start', 'update')], {}, { variables: { a: '{{b}}', b: 'B' } });
    expect(result.newVariables.out).toBe('{{b}}');
  });
});

describe('HTTP node texts', () => {
  /** Runs the HTTP node on `inputs`; resolves to the request it sent, or rejects. */
  async function send(inputs: RuntimeNode['inputs'], variables: Record<string, unknown>) {
    const sent: { headers: Record<string, string>; body?: string }[] = [];
    const httpCall = async (call: { headers: Record<string, string>; body?: string }) => {
      sent.push(call);
      return { status: 200, text: '{}' };
    };
    const deps = { appId: 'a', chatId: '', responseChatItemId: '', httpCall };
    const { httpRequest468 } = createHttpRunners(deps as unknown as NodeDeps);
    const http = node('http', 'httpRequest468', { inputs });
    const params = buildNodeParams(http, [http], variables);
    const context = { node: http, params, variables, histories: [], query: [], runtimeNodes: [http], runtimeEdges: [], mode: 'chat', stream: false, emit: () => undefined, isAborted: () => false, runBudget: { remaining: 10 } };
    await httpRequest468!(context as NodeRunContext);
    return sent;
  }
  const v = 'x'.repeat(5000);
  const headers = (count: number) => Array.from({ length: count }, (_, i) => ({ key: `h${i}`, value: '{{v}}' }));

  it('share one budget: many headers each naming a large value add up', async () => {
    const url = { key: 'system_httpReqUrl', value: 'http://example.test/' };
    const sent = await send([url, { key: 'system_httpMethod', value: 'GET' }, { key: 'system_httpHeader', value: headers(150) }], { v });
    expect(Object.keys(sent[0]!.headers)).toHaveLength(150);
    await expect(send([url, { key: 'system_httpMethod', value: 'GET' }, { key: 'system_httpHeader', value: headers(250) }], { v })).rejects.toThrow(TextTooLongError);
  });

  it('so do the strings of a JSON body', async () => {
    const body = (count: number) => `[${Array.from({ length: count }, () => '"{{v}}"').join(',')}]`;
    const inputs = (count: number) => [
      { key: 'system_httpReqUrl', value: 'http://example.test/' },
      { key: 'system_httpJsonBody', value: body(count) },
    ];
    expect(JSON.parse((await send(inputs(150), { v }))[0]!.body!)).toHaveLength(150);
    await expect(send(inputs(250), { v })).rejects.toThrow(TextTooLongError);
  });
});

describe('graph size', () => {
  const start = () => node('start', 'workflowStart', { isEntry: true });
  it('the dispatcher refuses graphs past the limits with a WorkflowError (graphs that came through no schema)', async () => {
    const many = Array.from({ length: MAX_GRAPH_NODES }, (_, i) => node(`n${i}`, 'emptyNode'));
    await expect(run([start(), ...many], [])).rejects.toThrow(`The workflow has ${MAX_GRAPH_NODES + 1} nodes; at most ${MAX_GRAPH_NODES} can run`);
    const edges = Array.from({ length: MAX_GRAPH_EDGES + 1 }, () => edge('start', 'start'));
    await expect(run([start()], edges)).rejects.toThrow(`at most ${MAX_GRAPH_EDGES} can run`);
    const wide = node('wide', 'emptyNode', { inputs: Array.from({ length: MAX_NODE_PARTS + 1 }, () => ({ key: 'k' })) });
    await expect(run([start(), wide], [])).rejects.toThrow(`Node 'wide' has ${MAX_NODE_PARTS + 1} inputs or outputs`);
  });

  it('graphs at the limits run', async () => {
    const many = Array.from({ length: MAX_GRAPH_NODES - 1 }, (_, i) => node(`n${i}`, 'emptyNode', { inputs: Array.from({ length: MAX_NODE_PARTS }, () => ({ key: 'k' })) }));
    const result = await run([start(), ...many], []);
    expect(result.flowResponses.map((r) => r.nodeId)).toEqual(['start']);
  });
});

describe('history rounds', () => {
  it(`a node asking for any number of rounds loads at most ${MAX_HISTORY_ROUNDS}`, () => {
    expect(historyLoadLimit([{ inputs: [{ key: 'history', value: 1e12 }] }])).toBe(MAX_HISTORY_ROUNDS);
    expect(historyLoadLimit([{ inputs: [{ key: 'maxContext', value: Number.POSITIVE_INFINITY }] }])).toBe(MAX_HISTORY_ROUNDS);
    expect(historyLoadLimit([{ inputs: [{ key: 'history', value: 50 }] }])).toBe(50);
  });
});

describe('pause between node checks', () => {
  it('the dispatcher awaits the pause before each node check and hands it to nested runs', async () => {
    let pauses = 0;
    const pause = async () => {
      pauses += 1;
    };
    const seen: unknown[] = [];
    const probe: NodeRunner = async (context) => {
      seen.push(context.pause);
      return {};
    };
    await run([node('start', 'workflowStart', { isEntry: true }), node('a', 'probe'), node('b', 'probe')], [edge('start', 'a'), edge('a', 'b')], { probe }, { pause });
    expect(pauses).toBe(3);
    expect(seen).toEqual([pause, pause]);
  });

  it('with a macrotask pause, other work of the process runs between the node runs of one turn', async () => {
    const log: string[] = [];
    let ticking = true;
    const tick = () => {
      log.push('tick');
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    const step: NodeRunner = async () => {
      log.push('run');
      return {};
    };
    await run([node('start', 'workflowStart', { isEntry: true }), node('E', 'step')], [edge('start', 'E'), edge('E', 'E')], { step }, { pause: () => new Promise<void>((resolve) => setImmediate(resolve)) });
    ticking = false;
    const runs = log.filter((entry) => entry === 'run').length;
    expect(runs).toBe(199);
    // Each run waits for the loop at least once: ticks come between them, not only after the turn.
    expect(log.lastIndexOf('tick')).toBeGreaterThan(log.indexOf('run'));
    expect(log.filter((entry) => entry === 'tick').length).toBeGreaterThan(runs / 2);
  });
});
