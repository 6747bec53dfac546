import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { dispatchWorkflow } from '../../src/domain/workflow/dispatch.js';
import { pureRunners } from '../../src/domain/workflow/pure-runners.js';
import type { NodeRunner, RuntimeEdge, RuntimeNode } from '../../src/domain/workflow/types.js';
import { completeChatOrCut, LlmError, streamChat } from '../../src/infra/llm-stream.js';
import { streamToolRound } from '../../src/platform/chat/workflow-nodes/tool-stream.js';

/**
 * A model call cut by the turn's own signal (its client hung up) answers what arrived, marked
 * `cut`; the provider failing still throws. A node failing once the turn was aborted ends the
 * run with what ran instead of failing it.
 */
const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** A provider; `answer` gets each request's response once its body was read. */
async function provider(answer: (res: ServerResponse) => void): Promise<{ baseUrl: string }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => answer(res));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` };
}
const chunk = (delta: unknown) => `data: ${JSON.stringify({ choices: [{ delta }] })}\n\n`;
/** Streams `parts` and then holds the answer open. */
const holding = (parts: string[]) => (res: ServerResponse) => {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  for (const part of parts) res.write(part);
};
const request = { model: 'm', messages: [{ role: 'user' as const, content: 'hi' }] };

describe('a model call cut by its own signal', () => {
  it('streamChat answers the text streamed so far, marked cut', async () => {
    const endpoint = await provider(holding([chunk({ content: 'First ' }), chunk({ content: 'half' })]));
    const controller = new AbortController();
    let seen = '';
    const result = await streamChat(endpoint, request, (text) => {
      seen += text;
      if (seen === 'First half') controller.abort();
    }, controller.signal);
    expect(result).toEqual({ content: 'First half', promptTokens: undefined, completionTokens: undefined, cut: true });
  });

  it('streamChat cut before the provider answered: nothing, marked cut', async () => {
    let asked: () => void = () => undefined;
    const reached = new Promise<void>((resolve) => (asked = resolve));
    const endpoint = await provider(() => asked());
    const controller = new AbortController();
    const pending = streamChat(endpoint, request, () => undefined, controller.signal);
    await reached;
    controller.abort();
    expect(await pending).toMatchObject({ content: '', cut: true });
  });

  it('streamChat: a provider breaking off still throws', async () => {
    const endpoint = await provider((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(chunk({ content: 'Half' }), () => res.destroy());
    });
    await expect(streamChat(endpoint, request, () => undefined, new AbortController().signal)).rejects.toThrow(/broke off/);
  });

  it('completeChatOrCut cut while waiting: an empty answer marked cut; a refusal still throws', async () => {
    let asked: () => void = () => undefined;
    const reached = new Promise<void>((resolve) => (asked = resolve));
    const held = await provider(() => asked());
    const controller = new AbortController();
    const pending = completeChatOrCut(held, request, controller.signal);
    await reached;
    controller.abort();
    expect(await pending).toEqual({ content: '', cut: true });

    const refusing = await provider((res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end('{"error":"overloaded"}');
    });
    await expect(completeChatOrCut(refusing, request, new AbortController().signal)).rejects.toBeInstanceOf(LlmError);
  });

  it('streamToolRound cut mid-call: the text so far and no call (its arguments may be incomplete)', async () => {
    const call = { index: 0, id: 'c1', function: { name: 'weather', arguments: '{"ci' } };
    const endpoint = await provider(holding([chunk({ content: 'Checking. ' }), chunk({ tool_calls: [call] })]));
    const controller = new AbortController();
    const result = await streamToolRound(endpoint, request, { onText: () => undefined, onToolCall: () => controller.abort(), onToolParams: () => undefined }, () => 'id', controller.signal);
    expect(result).toMatchObject({ content: 'Checking. ', cut: true });
    expect(result.toolCalls).toBeUndefined();
  });
});

describe('a node failing once the turn was aborted', () => {
  const node = (nodeId: string, flowNodeType: string): RuntimeNode => ({ nodeId, flowNodeType, name: nodeId, inputs: [{ key: 'text', value: `${nodeId} said` }], outputs: [], isEntry: nodeId === 'a' });
  const edge = (source: string, target: string): RuntimeEdge => ({ source, sourceHandle: `${source}-source-right`, target, targetHandle: `${target}-target-left`, status: 'waiting' });
  /** start a (billed) → b (fails, after the client hung up when `hungUp`) → c. */
  const run = (hungUp: boolean) => {
    let aborted = false;
    const billed: NodeRunner = async () => ({ answerText: 'first', responseData: { totalPoints: 2 }, usages: [{ moduleName: 'a', totalPoints: 2 }] });
    const failing: NodeRunner = async () => {
      aborted = hungUp;
      throw new Error('This operation was aborted');
    };
    let n = 0;
    return dispatchWorkflow({
      nodes: [node('a', 'billed'), node('b', 'failing'), node('c', 'answerNode')],
      edges: [edge('a', 'b'), edge('b', 'c')],
      variables: {},
      histories: [],
      query: [],
      runners: { ...pureRunners, billed, failing },
      mode: 'chat',
      newId: () => `r${++n}`,
      isAborted: () => aborted,
    });
  };

  it('ends the run with what ran: its answer, responses and usages', async () => {
    const result = await run(true);
    expect(result.assistantResponses).toEqual([{ type: 'text', text: { content: 'first' } }]);
    expect(result.flowResponses.map((response) => response.nodeId)).toEqual(['a']);
    expect(result.flowUsages).toEqual([{ moduleName: 'a', totalPoints: 2 }]);
  });

  it('fails the run as before when the turn was not aborted', async () => {
    await expect(run(false)).rejects.toThrow('This operation was aborted');
  });
});
