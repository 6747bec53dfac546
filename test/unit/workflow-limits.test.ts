/**
 * What one workflow turn may cost: node lookups by id and graph size.
 */
import { describe, expect, it } from 'vitest';
import { dispatchWorkflow } from '../../src/domain/workflow/dispatch.js';
import { MAX_GRAPH_EDGES, MAX_GRAPH_NODES, MAX_NODE_PARTS } from '../../src/domain/workflow/graph-limits.js';
import { buildNodeParams } from '../../src/domain/workflow/interpolate.js';
import { pureRunners } from '../../src/domain/workflow/pure-runners.js';
import type { NodeRunner, RuntimeEdge, RuntimeNode } from '../../src/domain/workflow/types.js';

const node = (nodeId: string, flowNodeType: string, extra: Partial<RuntimeNode> = {}): RuntimeNode => ({ nodeId, flowNodeType, name: nodeId, inputs: [], outputs: [], ...extra });
const edge = (source: string, target: string): RuntimeEdge => ({ source, sourceHandle: `${source}-source-right`, target, targetHandle: `${target}-target-left`, status: 'waiting' });

function run(nodes: RuntimeNode[], edges: RuntimeEdge[], runners: Record<string, NodeRunner> = {}, extra: { variables?: Record<string, unknown> } = {}) {
  return dispatchWorkflow({
    nodes,
    edges,
    variables: extra.variables ?? {},
    histories: [],
    query: [{ type: 'text', text: { content: 'hi' } }],
    runners: { ...pureRunners, ...runners },
    mode: 'chat',
    newId: () => 'r',
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
