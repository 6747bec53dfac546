import { describe, expect, it } from 'vitest';
import { dispatchWorkflow, WorkflowError } from '../../src/domain/workflow/dispatch.js';
import { MAX_TURN_OUTPUT_CHARS } from '../../src/domain/workflow/output-budget.js';
import type { NodeRunner, RuntimeEdge, RuntimeNode, WorkflowEvent } from '../../src/domain/workflow/types.js';

/**
 * A turn's output budget: loops multiplied what a node produces (a 900,000-character text
 * editor run 200 times answered 179 MB). Counted: run details, answers, streamed events other
 * than answer text (which its node returns too); a value reported twice counts once.
 */
const node = (nodeId: string, flowNodeType = nodeId): RuntimeNode => ({ nodeId, flowNodeType, name: nodeId, inputs: [], outputs: [] });
const edge = (source: string, target: string): RuntimeEdge => ({ source, sourceHandle: `${source}-source-right`, target, targetHandle: `${target}-target-left`, status: 'waiting' });
/** The dispatcher marks the nodes it ran: a fresh start node each run. */
const entry = (): RuntimeNode => ({ ...node('start', 'workflowStart'), isEntry: true });

/** start → a ⇄ b: a loop that runs until the run budget (200) or the output budget ends it. */
function loop(runners: Record<string, NodeRunner>, maxOutputChars?: number, runs = { count: 0 }) {
  const events: WorkflowEvent[] = [];
  const counted = (runner: NodeRunner): NodeRunner => (context) => {
    runs.count += 1;
    return runner(context);
  };
  return dispatchWorkflow({
    nodes: [entry(), node('a'), node('b')],
    edges: [edge('start', 'a'), edge('a', 'b'), edge('b', 'a')],
    variables: {},
    histories: [],
    query: [],
    runners: { workflowStart: async () => ({}), a: counted(runners.a!), b: counted(runners.b ?? runners.a!) },
    mode: 'chat',
    maxOutputChars,
    newId: () => 'id',
    emit: (event) => events.push(event),
  }).then((result) => ({ result, events }));
}

describe('turn output budget', () => {
  it('defaults to 20,000,000 characters', () => {
    expect(MAX_TURN_OUTPUT_CHARS).toBe(20_000_000);
  });

  it('ends a loop whose run details pass it, naming the node', async () => {
    const runs = { count: 0 };
    const detail: NodeRunner = async () => ({ responseData: { textOutput: 'x'.repeat(1000) } });
    const failed = loop({ a: detail }, 10_000, runs);
    await expect(failed).rejects.toThrow(WorkflowError);
    await expect(failed).rejects.toThrow(/^Node 'a|b' \(a|b\): the turn produced more than 10000 characters of answers and run details/);
    expect(runs.count).toBeLessThan(12);
  });

  it('counts streamed events (a variable update sends every variable), but answer text only once', async () => {
    const variables: NodeRunner = async ({ emit }) => {
      emit({ event: 'updateVariables', variables: { big: 'v'.repeat(1000) } });
      return {};
    };
    await expect(loop({ a: variables }, 10_000)).rejects.toThrow(/more than 10000 characters/);

    // 200 runs of 40 characters of answer, streamed and returned: within 200 × 40 × 1.5.
    const answer: NodeRunner = async ({ emit }) => {
      emit({ event: 'answer', text: 'a'.repeat(40) });
      return { answerText: 'a'.repeat(40) };
    };
    const { result, events } = await loop({ a: answer }, 12_000);
    expect(result.assistantResponses).toHaveLength(1);
    expect(events.filter((event) => event.event === 'answer')).toHaveLength(199);
  });

  it("counts a nested run's details once, though the node that ran it returns them too", async () => {
    const child: NodeRunner = async () => ({ responseData: { textOutput: 'c'.repeat(4000) } });
    const app: NodeRunner = async (context) => {
      const nested = await dispatchWorkflow({
        nodes: [{ ...node('inner', 'child'), isEntry: true }],
        edges: [],
        variables: {},
        histories: [],
        query: [],
        runners: { child },
        mode: context.mode,
        runBudget: context.runBudget,
        emit: context.emit,
        newId: () => 'inner',
      });
      return { responseData: { pluginDetail: nested.flowResponses } };
    };
    const result = await dispatchWorkflow({
      nodes: [entry(), node('app')],
      edges: [edge('start', 'app')],
      variables: {},
      histories: [],
      query: [],
      runners: { workflowStart: async () => ({}), app },
      mode: 'chat',
      maxOutputChars: 6000,
      newId: () => 'id',
    });
    expect(result.flowResponses).toHaveLength(1);
  });
});
