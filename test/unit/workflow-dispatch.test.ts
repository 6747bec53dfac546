import { describe, expect, it } from 'vitest';
import { dispatchWorkflow, MissingInputError, NodeInputError, nodeRunStatus, persistedVariables, WorkflowError } from '../../src/domain/workflow/dispatch.js';
import { EdgeIndex } from '../../src/domain/workflow/edge-index.js';
import { pureRunners } from '../../src/domain/workflow/pure-runners.js';
import { type NodeRunner, type RuntimeEdge, type RuntimeNode, SELECTED_TOOLS_HANDLE, type StoreNode, type WorkflowEvent } from '../../src/domain/workflow/types.js';
import { simpleFormToWorkflow } from '../../src/domain/workflow/simple-app.js';
import { toolResponseText } from '../../src/domain/workflow/tool-response.js';

const node = (nodeId: string, flowNodeType: string, extra: Partial<StoreNode> = {}): RuntimeNode => ({
  nodeId,
  flowNodeType,
  name: nodeId,
  inputs: [],
  outputs: [],
  ...extra,
});
const edge = (source: string, target: string, handle = 'right', status: RuntimeEdge['status'] = 'waiting'): RuntimeEdge => ({
  source,
  sourceHandle: `${source}-source-${handle}`,
  target,
  targetHandle: `${target}-target-left`,
  status,
});
const text = (content: string) => ({ type: 'text' as const, text: { content } });

function run(nodes: RuntimeNode[], edges: RuntimeEdge[], extra: Record<string, NodeRunner> = {}, variables: Record<string, unknown> = {}, query = [text('hello')]) {
  let n = 0;
  const events: WorkflowEvent[] = [];
  return dispatchWorkflow({
    nodes,
    edges,
    variables,
    histories: [],
    query,
    runners: { ...pureRunners, ...extra },
    mode: 'chat',
    newId: () => `r${++n}`,
    emit: (event) => events.push(event),
  }).then((result) => ({ result, events }));
}

describe('node run status', () => {
  const cases: { name: string; statuses: RuntimeEdge['status'][]; expected: string }[] = [
    { name: 'no incoming edges runs', statuses: [], expected: 'run' },
    { name: 'all active runs', statuses: ['active', 'active'], expected: 'run' },
    { name: 'active and skipped runs', statuses: ['active', 'skipped'], expected: 'run' },
    { name: 'all skipped skips', statuses: ['skipped', 'skipped'], expected: 'skip' },
    { name: 'one waiting waits', statuses: ['active', 'waiting'], expected: 'wait' },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const edges = c.statuses.map((status, i) => edge(`s${i}`, 't', 'right', status));
      expect(nodeRunStatus(node('t', 'answerNode'), new EdgeIndex(edges))).toBe(c.expected);
    });
  }

  it('separates edges on a cycle from common ones', () => {
    const edges = [edge('a', 'b'), edge('b', 'c'), edge('c', 'b', 'loop')];
    const split = new EdgeIndex(edges).split('b');
    expect(split.common.map((e) => e.source)).toEqual(['a']);
    expect(split.recursive.map((e) => e.source)).toEqual(['c']);
  });

  /** The definition, searched afresh: an incoming edge is recursive when its source is reachable from the node. */
  function bruteForceSplit(nodeId: string, edges: RuntimeEdge[]) {
    const followed = edges.filter((e) => e.sourceHandle !== SELECTED_TOOLS_HANDLE);
    const reachable = new Set<string>();
    const queue = [nodeId];
    while (queue.length > 0) {
      const current = queue.pop()!;
      for (const e of followed) {
        if (e.source !== current || reachable.has(e.target)) continue;
        reachable.add(e.target);
        queue.push(e.target);
      }
    }
    const incoming = followed.filter((e) => e.target === nodeId);
    return { common: incoming.filter((e) => !reachable.has(e.source)), recursive: incoming.filter((e) => reachable.has(e.source)) };
  }

  it('finds the edges on a cycle as a search from each node would, on random graphs', () => {
    // A fixed pseudo-random sequence: the same graphs on every run.
    let seed = 7;
    const random = (below: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % below;
    };
    for (let round = 0; round < 300; round++) {
      const size = 1 + random(12);
      const edges: RuntimeEdge[] = [];
      for (let i = random(size * 3); i > 0; i--) {
        // Self loops, parallel edges, tool selections and edges to nodes outside the list included.
        const handle = random(6) === 0 ? 'x' : 'right';
        const e = edge(`n${random(size)}`, `n${random(size + 1)}`, handle);
        if (handle === 'x') e.sourceHandle = SELECTED_TOOLS_HANDLE;
        edges.push(e);
      }
      const index = new EdgeIndex(edges);
      for (let n = 0; n <= size; n++) expect(index.split(`n${n}`), `round ${round}, node n${n}`).toEqual(bruteForceSplit(`n${n}`, edges));
    }
  });

  it('keeps the edges of each node in the graph order', () => {
    const edges = [edge('a', 'b'), edge('b', 'c'), edge('a', 'c', 'other'), edge('c', 'a', 'back')];
    const index = new EdgeIndex(edges);
    expect(index.from('a')).toEqual([edges[0], edges[2]]);
    expect(index.into('c')).toEqual([edges[1], edges[2]]);
    expect(index.split('a')).toEqual({ common: [], recursive: [edges[3]] });
    expect(index.from('nowhere')).toEqual([]);
  });
});

describe('dispatchWorkflow', () => {
  it('runs start → answer and interpolates variables and node outputs', async () => {
    const nodes = [
      node('start', 'workflowStart', { isEntry: true, outputs: [{ id: 'userChatInput', key: 'userChatInput', valueType: 'string' }] }),
      node('ans', 'answerNode', { inputs: [{ key: 'text', valueType: 'string', value: 'Hi {{name}}, you said {{$start.userChatInput$}}' }] }),
    ];
    const { result, events } = await run(nodes, [edge('start', 'ans')], {}, { name: 'Ann' });
    expect(result.assistantResponses).toEqual([text('\nHi Ann, you said hello')]);
    expect(events).toContainEqual({ event: 'fastAnswer', text: '\nHi Ann, you said hello' });
    expect(result.flowResponses.map((r) => r.moduleType)).toEqual(['workflowStart', 'answerNode']);
  });

  it('textEditor writes booleans and objects as the reference does, and global variables win over its inputs', async () => {
    const nodes = [
      node('start', 'workflowStart', { isEntry: true }),
      node('fmt', 'textEditor', {
        inputs: [
          { key: 'system_addInputParam', renderTypeList: ['addInputParam'], value: {} },
          { key: 'ok', canEdit: true, value: true, valueType: 'boolean' },
          { key: 'obj', canEdit: true, value: { a: 1 }, valueType: 'object' },
          { key: 'name', canEdit: true, value: 'from the node', valueType: 'string' },
          { key: 'system_textareaInput', value: '{{ok}} {{obj}} {{name}} {{list}}' },
        ],
        outputs: [{ id: 'system_text', key: 'system_text', valueType: 'string' }],
      }),
    ];
    // A global that is neither text nor a number is left as written.
    const { result } = await run(nodes, [edge('start', 'fmt')], {}, { name: 'global', list: [1, 2] });
    expect(result.flowResponses.find((r) => r.moduleType === 'textEditor')?.textOutput).toBe('true {\n  "a": 1\n} global {{list}}');
  });

  it('a null reaching text inputs is written `null`, as 4.8.10 formats it (string inputs, editor references, text editor inputs)', async () => {
    const nodes = [
      node('start', 'workflowStart', { isEntry: true }),
      node('src', 'emits', { outputs: [{ id: 'nil', key: 'nil', valueType: 'any' }] }),
      node('fmt', 'textEditor', {
        inputs: [
          { key: 'system_addInputParam', renderTypeList: ['addInputParam'], value: {} },
          { key: 'raw', canEdit: true, value: ['src', 'nil'], valueType: 'any' },
          { key: 'system_textareaInput', value: 'raw={{raw}}' },
        ],
        outputs: [{ id: 'system_text', key: 'system_text', valueType: 'string' }],
      }),
      node('ans', 'answerNode', { inputs: [{ key: 'text', valueType: 'string', value: ['src', 'nil'] }] }),
      node('ans2', 'answerNode', { inputs: [{ key: 'text', valueType: 'string', value: 'ref={{$src.nil$}}' }] }),
    ];
    const emits: NodeRunner = async () => ({ outputs: { nil: null }, responseData: {} });
    const { result } = await run(nodes, [edge('start', 'src'), edge('src', 'fmt'), edge('fmt', 'ans'), edge('ans', 'ans2')], { emits });
    expect(result.flowResponses.find((r) => r.nodeId === 'fmt')?.textOutput).toBe('raw=null');
    expect(result.flowResponses.find((r) => r.nodeId === 'ans')?.textOutput).toBe('null');
    expect(result.flowResponses.find((r) => r.nodeId === 'ans2')?.textOutput).toBe('ref=null');
  });

  it('an isResponseAnswerText switch stored as null still answers, as the reference reads it', async () => {
    const nodes = [node('start', 'workflowStart', { isEntry: true }), node('says', 'says', { inputs: [{ key: 'isResponseAnswerText', valueType: 'boolean', value: null }] })];
    const says: NodeRunner = async () => ({ answerText: 'hi', responseData: {} });
    const { result } = await run(nodes, [edge('start', 'says')], { says });
    expect(result.assistantResponses).toEqual([text('hi')]);
  });

  it('an answer node with nothing to say answers an empty line, not a JSON empty string', async () => {
    const nodes = [node('start', 'workflowStart', { isEntry: true }), node('ans', 'answerNode', { inputs: [{ key: 'text', valueType: 'any', value: undefined }] })];
    const { result } = await run(nodes, [edge('start', 'ans')]);
    expect(result.flowResponses.find((r) => r.moduleType === 'answerNode')?.textOutput).toBe('');
  });

  it('a plugin input is listed among the run details with an empty entry, as the reference', async () => {
    const nodes = [
      node('pin', 'pluginInput', { isEntry: true, inputs: [{ key: 'who', valueType: 'string', value: 'Ada' }], outputs: [{ id: 'who', key: 'who', valueType: 'string' }] }),
      node('pout', 'pluginOutput', { inputs: [{ key: 'who', valueType: 'string', value: ['pin', 'who'] }] }),
    ];
    const { result } = await run(nodes, [edge('pin', 'pout')]);
    expect(result.flowResponses.map((r) => r.moduleType)).toEqual(['pluginInput', 'pluginOutput']);
    expect(result.flowResponses[1]?.pluginOutput).toEqual({ who: 'Ada' });
  });

  it('a pluginOutput whose branch was skipped, or that nothing reaches, leaves no response (the reference drops its forced run)', async () => {
    const pluginGraph = () => [
      node('pin', 'pluginInput', { isEntry: true, inputs: [{ key: 'n', valueType: 'string', value: '1' }], outputs: [{ id: 'n', key: 'n', valueType: 'string' }] }),
      node('if', 'ifElseNode', {
        inputs: [{ key: 'ifElseList', value: [{ condition: 'AND', list: [{ variable: ['pin', 'n'], condition: 'equalTo', value: '2' }] }] }],
        outputs: [{ id: 'ifElseResult', key: 'ifElseResult' }],
      }),
      node('pout', 'pluginOutput', { inputs: [{ key: 'n', valueType: 'string', value: ['pin', 'n'] }] }),
    ];
    const skipped = await run(pluginGraph(), [edge('pin', 'if'), edge('if', 'pout', 'IF')]);
    expect(skipped.result.flowResponses.map((r) => r.moduleType)).toEqual(['pluginInput', 'ifElseNode']);
    const unreached = await run(pluginGraph(), [edge('pin', 'if')]);
    expect(unreached.result.flowResponses.map((r) => r.moduleType)).toEqual(['pluginInput', 'ifElseNode']);
    // Reached, it answers once.
    const reached = await run(pluginGraph(), [edge('pin', 'if'), edge('if', 'pout', 'ELSE')]);
    expect(reached.result.flowResponses.map((r) => r.moduleType)).toEqual(['pluginInput', 'ifElseNode', 'pluginOutput']);
  });

  it("a node's empty tool response ({} or []) keeps its usage but none of its answer, as the reference's bookkeeping", async () => {
    const answering = (toolResponses: unknown): NodeRunner => async () => ({
      responseData: {},
      usages: [{ moduleName: 'x', totalPoints: 1 }],
      assistantResponses: [text('said')],
      toolResponses,
    });
    for (const [toolResponses, kept] of [[{}, false], [[], false], [{ a: 1 }, true], ['', true]] as const) {
      const nodes = [node('start', 'workflowStart', { isEntry: true }), node('p', 'answering')];
      const { result } = await run(nodes, [edge('start', 'p')], { answering: answering(toolResponses) });
      expect(result.flowUsages).toHaveLength(1);
      expect(result.assistantResponses).toEqual(kept ? [text('said')] : []);
      expect(result.toolResponses).toEqual(kept ? [toolResponses] : []);
    }
  });

  const ifElseCases = [
    { input: '5', expected: 'IF', answer: '\nbig' },
    { input: '1', expected: 'ELSE', answer: '\nsmall' },
  ];
  for (const c of ifElseCases) {
    it(`ifElse picks ${c.expected} and skips the other branch (input ${c.input})`, async () => {
      const nodes = [
        node('start', 'workflowStart', { isEntry: true, outputs: [{ id: 'userChatInput', key: 'userChatInput' }] }),
        node('if', 'ifElseNode', {
          inputs: [{ key: 'ifElseList', value: [{ condition: 'AND', list: [{ variable: ['start', 'userChatInput'], condition: 'greaterThan', value: '3' }] }] }],
          outputs: [{ id: 'ifElseResult', key: 'ifElseResult' }],
        }),
        node('big', 'answerNode', { inputs: [{ key: 'text', value: 'big' }] }),
        node('small', 'answerNode', { inputs: [{ key: 'text', value: 'small' }] }),
        node('after', 'answerNode', { inputs: [{ key: 'text', value: 'end' }] }),
      ];
      const edges = [edge('start', 'if'), edge('if', 'big', 'IF'), edge('if', 'small', 'ELSE'), edge('big', 'after'), edge('small', 'after')];
      const { result } = await run(nodes, edges, {}, {}, [text(c.input)]);
      expect(result.assistantResponses).toEqual([text(`${c.answer}\nend`)]);
      const after = result.flowResponses.filter((r) => r.nodeId === 'after');
      expect(after).toHaveLength(1);
    });
  }

  it('stops a loop at the max run count', async () => {
    let count = 0;
    const counter: NodeRunner = async () => {
      count += 1;
      return { responseData: {} };
    };
    const nodes = [node('start', 'workflowStart', { isEntry: true }), node('a', 'counter'), node('b', 'counter')];
    const edges = [edge('start', 'a'), edge('a', 'b'), edge('b', 'a', 'loop')];
    await dispatchWorkflow({ nodes, edges, variables: {}, histories: [], query: [], runners: { ...pureRunners, counter }, mode: 'chat', maxRunTimes: 10, newId: () => 'x' });
    expect(count).toBe(9);
  });

  it('nested runs spend from the one budget of the turn, so fan-out across levels stays bounded', async () => {
    let count = 0;
    // Each nested node runs the same graph again (an app calling itself), 10 at a time.
    const graph = () => ({
      nodes: [node('start', 'workflowStart', { isEntry: true }), ...Array.from({ length: 10 }, (_, i) => node(`n${i}`, 'nested'))],
      edges: Array.from({ length: 10 }, (_, i) => edge('start', `n${i}`)),
    });
    const runners: Record<string, NodeRunner> = {
      ...pureRunners,
      nested: async (context) => {
        count += 1;
        await dispatchWorkflow({ ...graph(), variables: {}, histories: [], query: [], runners, mode: 'chat', runBudget: context.runBudget, newId: () => 'x' });
        return { responseData: {} };
      },
    };
    await dispatchWorkflow({ ...graph(), variables: {}, histories: [], query: [], runners, mode: 'chat', maxRunTimes: 50, newId: () => 'x' });
    // 50 runs in all, starts included (each nested graph's start spends one too).
    expect(count).toBeGreaterThan(10);
    expect(count).toBeLessThan(50);
  });

  it('a failing node stops the rest of the turn, nested runs included', async () => {
    let started = 0;
    const runners: Record<string, NodeRunner> = {
      ...pureRunners,
      slow: async () => {
        started += 1;
        await new Promise((resolve) => setTimeout(resolve, 5));
        return { responseData: {} };
      },
      fail: async () => {
        throw new Error('broken');
      },
    };
    const nodes = [node('start', 'workflowStart', { isEntry: true }), node('bad', 'fail'), node('s1', 'slow'), node('s2', 'slow'), node('s3', 'slow')];
    const edges = [edge('start', 'bad'), edge('start', 's1'), edge('s1', 's2'), edge('s2', 's3')];
    await expect(dispatchWorkflow({ nodes, edges, variables: {}, histories: [], query: [], runners, mode: 'chat', newId: () => 'x' })).rejects.toThrow('broken');
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(started).toBe(1);
  });

  it('a loop with a branch inside skips the branch not taken on every pass', async () => {
    // start → a → pick; pick chooses b (first two passes) or c (after); b and c join at j; j → a again.
    let passes = 0;
    const ran: string[] = [];
    const runners: Record<string, NodeRunner> = {
      ...pureRunners,
      step: async ({ node }) => {
        ran.push(node.nodeId);
        return { responseData: {} };
      },
      pick: async () => {
        passes += 1;
        ran.push(`pick${passes}`);
        return { responseData: {}, skipHandleIds: [passes <= 2 ? 'pick-source-c' : 'pick-source-b'] };
      },
      join: async () => {
        ran.push('j');
        // Two passes through the join, then the loop edge is skipped.
        return { responseData: {}, skipHandleIds: passes >= 2 ? ['j-source-loop'] : [] };
      },
    };
    const nodes = [node('start', 'workflowStart', { isEntry: true }), node('a', 'step'), node('pick', 'pick'), node('b', 'step'), node('c', 'step'), node('j', 'join')];
    const edges = [edge('start', 'a'), edge('a', 'pick'), edge('pick', 'b', 'b'), edge('pick', 'c', 'c'), edge('b', 'j'), edge('c', 'j'), edge('j', 'a', 'loop')];
    await dispatchWorkflow({ nodes, edges, variables: {}, histories: [], query: [], runners, mode: 'chat', newId: () => 'x' });
    expect(ran).toEqual(['a', 'pick1', 'b', 'j', 'a', 'pick2', 'b', 'j']);
  });

  it('a runner tripping over an input of another shape fails the run as a workflow error naming the node', async () => {
    const nodes = [node('start', 'workflowStart', { isEntry: true }), node('odd', 'reads', { name: 'Reader' })];
    const reads: NodeRunner = async ({ params }) => ({ outputs: { n: (params.missing as { length: number }).length } });
    const failure = await run(nodes, [edge('start', 'odd')], { reads }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(WorkflowError);
    expect((failure as Error).message).toMatch(/^Node 'Reader' \(reads\) cannot use its inputs: /);
  });

  it('a node refusing its inputs (NodeInputError) is named by the dispatcher, once, whatever runner throws it', async () => {
    const nodes = [node('start', 'workflowStart', { isEntry: true }), node('odd', 'refuses', { name: 'Refuser' })];
    const refuses: NodeRunner = async () => {
      throw new NodeInputError('the value is not a list');
    };
    const failure = await run(nodes, [edge('start', 'odd')], { refuses }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(WorkflowError);
    expect(failure).not.toBeInstanceOf(NodeInputError);
    expect((failure as Error).message).toBe("Node 'Refuser' (refuses): the value is not a list");
    // A missing value names the node after the reference's message, as before.
    const missing: NodeRunner = async () => {
      throw new MissingInputError('Input is empty', 'content');
    };
    const gap = await run([node('start', 'workflowStart', { isEntry: true }), node('x', 'missing', { name: 'Extractor' })], [edge('start', 'x')], { missing }).catch((error: unknown) => error);
    expect((gap as Error).message).toBe("Input is empty: node 'Extractor' got no value for 'content'");
  });

  it('a node input error inside a nested run names the inner node only (the outer dispatcher adds no second name)', async () => {
    const inner = [node('in', 'refuses', { name: 'Inner', isEntry: true })];
    const refuses: NodeRunner = async () => {
      throw new NodeInputError('too long');
    };
    const nests: NodeRunner = async () => {
      await dispatchWorkflow({ nodes: inner, edges: [], variables: {}, histories: [], query: [], runners: { refuses }, mode: 'chat', newId: () => 'n' });
      return {};
    };
    const nodes = [node('start', 'workflowStart', { isEntry: true }), node('outer', 'nests', { name: 'Outer' })];
    const failure = await run(nodes, [edge('start', 'outer')], { nests }).catch((error: unknown) => error);
    expect((failure as Error).message).toBe("Node 'Inner' (refuses): too long");
  });

  it('an ifElse condition too costly to check names the node once, before its branch', async () => {
    const ifElse = node('branch', 'ifElseNode', {
      name: 'Branch',
      inputs: [{ key: 'ifElseList', value: [{ condition: 'AND', list: [{ variable: ['VARIABLE_NODE_ID', 'text'], condition: 'reg', value: '/[^x]{1000}[^ab]/' }] }] }],
    });
    const failure = await run([node('start', 'workflowStart', { isEntry: true }), ifElse], [edge('start', 'branch')], {}, { text: 'ab'.repeat(5_000_000) }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(WorkflowError);
    expect((failure as Error).message).toMatch(/^Node 'Branch' \(ifElseNode\): ifElse branch IF, condition 1 \(reg\): testing /);
  });

  it('variableUpdate changes a global variable used later', async () => {
    const nodes = [
      node('start', 'workflowStart', { isEntry: true }),
      node('upd', 'variableUpdate', { inputs: [{ key: 'updateList', value: [{ variable: ['VARIABLE_NODE_ID', 'color'], value: ['', 'blue'], valueType: 'string', renderType: 'input' }] }] }),
      node('ans', 'answerNode', { inputs: [{ key: 'text', value: 'color={{color}}' }] }),
    ];
    const { result, events } = await run(nodes, [edge('start', 'upd'), edge('upd', 'ans')], {}, { color: 'red' });
    expect(result.newVariables.color).toBe('blue');
    expect(result.assistantResponses).toEqual([text('\ncolor=blue')]);
    expect(events.some((e) => e.event === 'updateVariables')).toBe(true);
  });

  it('stops at userSelect and resumes from the memory edges', async () => {
    const build = () => [
      node('start', 'workflowStart', { isEntry: true }),
      node('sel', 'userSelect', {
        inputs: [
          { key: 'description', value: 'Sure?' },
          { key: 'userSelectOptions', value: [{ key: 'yes', value: 'Confirm' }, { key: 'no', value: 'Cancel' }] },
        ],
        outputs: [{ id: 'selectResult', key: 'selectResult' }],
      }),
      node('y', 'answerNode', { inputs: [{ key: 'text', value: 'done' }] }),
      node('n', 'answerNode', { inputs: [{ key: 'text', value: 'stopped' }] }),
    ];
    const edges = () => [edge('start', 'sel'), edge('sel', 'y', 'yes'), edge('sel', 'n', 'no')];
    const first = await run(build(), edges());
    const interactive = first.result.interactive!;
    expect(interactive.entryNodeIds).toEqual(['sel']);
    expect(first.result.assistantResponses.at(-1)?.type).toBe('interactive');

    const nodes = build().map((n) => ({ ...n, isEntry: interactive.entryNodeIds.includes(n.nodeId) }));
    const second = await run(nodes, interactive.memoryEdges, {}, {}, [text('Confirm')]);
    expect(second.result.assistantResponses).toEqual([text('\ndone')]);

    // A reply naming no option ends both branches, the reply as typed being the result.
    const typed = build().map((n) => ({ ...n, isEntry: interactive.entryNodeIds.includes(n.nodeId) }));
    const third = await run(typed, interactive.memoryEdges, {}, {}, [text('maybe later')]);
    expect(third.result.assistantResponses).toEqual([]);
    expect(third.result.interactive).toBeUndefined();
    expect(third.result.flowResponses.find((r) => r.moduleType === 'userSelect')?.userSelectResult).toBe('maybe later');
    expect(typed.find((n) => n.nodeId === 'sel')?.outputs[0]?.value).toBe('maybe later');
  });

  it('rejects an unsupported node type with a clear error', async () => {
    const nodes = [node('start', 'workflowStart', { isEntry: true }), node('lafy', 'lafModule', { name: 'Laf' })];
    await expect(run(nodes, [edge('start', 'lafy')])).rejects.toThrow(/lafModule.*not supported/);
    // Names of Object.prototype's members are no runners either (they ran as silent no-ops).
    for (const type of ['constructor', 'toString', 'hasOwnProperty', '__proto__']) {
      const named = [node('start', 'workflowStart', { isEntry: true }), node('odd', type, { name: 'Odd' })];
      await expect(run(named, [edge('start', 'odd')])).rejects.toThrow(new RegExp(`'${type}'.*not supported`));
    }
  });

  it('debug mode runs only the entries and reports the next nodes', async () => {
    const nodes = [node('start', 'workflowStart', { isEntry: true }), node('ans', 'answerNode', { inputs: [{ key: 'text', value: 'x' }] })];
    const result = await dispatchWorkflow({ nodes, edges: [edge('start', 'ans')], variables: {}, histories: [], query: [], runners: pureRunners, mode: 'debug', newId: () => 'x' });
    expect(result.debugResponse.nextStepRunNodes.map((n) => n.nodeId)).toEqual(['ans']);
    expect(result.flowResponses).toHaveLength(1);
  });
});

describe('debug steps (the editor sends the previous step’s nextStepRunNodes as entries)', () => {
  const debugRun = (nodes: RuntimeNode[], edges: RuntimeEdge[]) =>
    dispatchWorkflow({ nodes, edges, variables: {}, histories: [], query: [text('hello')], runners: pureRunners, mode: 'debug', newId: () => 'x' });
  const answer = (nodeId: string, extra: Partial<StoreNode> = {}) => node(nodeId, 'answerNode', { inputs: [{ key: 'text', value: nodeId }], ...extra });

  it('an entry whose only incoming edge was skipped is skipped, and its targets reported next', async () => {
    const nodes = [answer('yes', { isEntry: true }), answer('no', { isEntry: true }), answer('after-no')];
    const edges = [edge('if', 'yes', 'IF', 'active'), edge('if', 'no', 'ELSE', 'skipped'), edge('no', 'after-no')];
    const result = await debugRun(nodes, edges);
    expect(result.flowResponses.map((r) => r.nodeId)).toEqual(['yes']);
    expect(result.debugResponse.nextStepRunNodes.map((n) => n.nodeId)).toEqual(['after-no']);
  });

  it('a merge entry waits while one of its branches has not arrived', async () => {
    const nodes = [answer('join', { isEntry: true })];
    const result = await debugRun(nodes, [edge('a', 'join', 'right', 'active'), edge('b', 'join', 'right', 'waiting')]);
    expect(result.flowResponses).toEqual([]);
    expect(result.debugResponse.nextStepRunNodes).toEqual([]);
  });
});

describe('persistedVariables', () => {
  it('keeps what a chat stores and drops the run-only variables, without touching its input', () => {
    const variables = { userId: 'u1', appId: 'a', chatId: 'c', responseChatItemId: 'r', histories: [], cTime: 'now', city: 'Paris', count: 2 };
    expect(persistedVariables(variables)).toEqual({ userId: 'u1', city: 'Paris', count: 2 });
    expect(variables.appId).toBe('a');
    const odd = JSON.parse('{"__proto__":{"x":1},"kept":true}') as Record<string, unknown>;
    const stored = persistedVariables(odd);
    expect(stored).toEqual({ kept: true });
    expect(Object.getPrototypeOf(stored)).toBe(Object.prototype);
  });
});

describe('simpleFormToWorkflow', () => {
  it('builds start → AI chat without datasets', () => {
    const { nodes, edges } = simpleFormToWorkflow({ aiSettings: { model: 'm1' } });
    expect(nodes.map((n) => n.flowNodeType)).toEqual(['userGuide', 'workflowStart', 'chatNode']);
    expect(edges).toHaveLength(1);
  });
  it('builds start → search → AI chat with datasets', () => {
    const { nodes, edges } = simpleFormToWorkflow({ dataset: { datasets: [{ datasetId: 'd1' }] } });
    expect(nodes.map((n) => n.flowNodeType)).toEqual(['userGuide', 'workflowStart', 'datasetSearchNode', 'chatNode']);
    expect(edges.map((e) => `${e.source}>${e.target}`)).toEqual(['workflowStartNodeId>iKBoX2vIzETU', 'iKBoX2vIzETU>7BdojPlukIQw']);
  });
});

describe('toolResponseText', () => {
  it("answers the last node's non-empty tool response, objects as indented JSON, else what was said, else none", () => {
    expect(toolResponseText(['first', { result: 42 }, [], {}], '')).toBe('{\n  "result": 42\n}');
    expect(toolResponseText(['first', 'second'], '')).toBe('second');
    expect(toolResponseText([7], '')).toBe('7');
    expect(toolResponseText([[], {}], 'it said this')).toBe('it said this');
    expect(toolResponseText([], '')).toBe('none');
  });
});
