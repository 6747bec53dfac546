import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { streamToolRound } from '../../src/platform/chat/workflow-nodes/tool-stream.js';

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

async function provider(answer: (res: ServerResponse) => void): Promise<string> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => answer(res));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
}

const sse = (chunks: unknown[]) => (res: ServerResponse) => {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  for (const chunk of chunks) res.write(`data: ${JSON.stringify(chunk)}\n\n`);
  res.end('data: [DONE]\n\n');
};
const delta = (d: unknown) => ({ choices: [{ delta: d }] });

function recorder() {
  const events: string[] = [];
  return {
    events,
    handlers: {
      onText: (text: string) => events.push(`text:${text}`),
      onToolCall: (call: { id: string; function: { name: string; arguments: string } }) => events.push(`call:${call.id}:${call.function.name}:${call.function.arguments}`),
      onToolParams: (call: { id: string }, fragment: string) => events.push(`params:${call.id}:${fragment}`),
    },
  };
}

describe('streamToolRound', () => {
  it('assembles calls from their pieces, by index or (without indexes) by id, and hands each piece on', async () => {
    const baseUrl = await provider(
      sse([
        delta({ content: 'Hm. ' }),
        delta({ tool_calls: [{ index: 0, id: 'a', type: 'function', function: { name: 'search', arguments: '{"q":' } }] }),
        delta({ tool_calls: [{ index: 0, function: { arguments: '"x"}' } }] }),
        // A provider without indexes: a new id is a new call.
        delta({ tool_calls: [{ id: 'b', function: { name: 'calc', arguments: '' } }] }),
        delta({ tool_calls: [{ function: { arguments: '{}' } }] }),
        { choices: [], usage: { prompt_tokens: 7, completion_tokens: 3 } },
      ]),
    );
    const { events, handlers } = recorder();
    const result = await streamToolRound({ baseUrl }, { model: 'm', messages: [] }, handlers, () => 'new');
    expect(events).toEqual(['text:Hm. ', 'call:a:search:{"q":', 'params:a:"x"}', 'call:b:calc:', 'params:b:{}']);
    expect(result).toEqual({
      content: 'Hm. ',
      toolCalls: [
        { id: 'a', type: 'function', function: { name: 'search', arguments: '{"q":"x"}' } },
        { id: 'b', type: 'function', function: { name: 'calc', arguments: '{}' } },
      ],
      promptTokens: 7,
      completionTokens: 3,
    });
  });

  it('reads a provider that answers the streamed request with one JSON completion', async () => {
    const baseUrl = await provider((res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ choices: [{ message: { content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'search', arguments: '{}' } }] } }], usage: { prompt_tokens: 1, completion_tokens: 2 } }));
    });
    const { events, handlers } = recorder();
    const result = await streamToolRound({ baseUrl }, { model: 'm', messages: [] }, handlers, () => 'new');
    expect(events).toEqual(['call:c:search:{}']);
    expect(result.toolCalls).toEqual([{ id: 'c', type: 'function', function: { name: 'search', arguments: '{}' } }]);
  });

  it("gives a call the stream left without an id one of its own; a provider's error status is an LlmError", async () => {
    const noId = await provider(sse([delta({ tool_calls: [{ index: 0, function: { name: 'search', arguments: '{}' } }] })]));
    const { events, handlers } = recorder();
    const result = await streamToolRound({ baseUrl: noId }, { model: 'm', messages: [] }, handlers, () => 'own-id');
    expect(events).toEqual(['call:own-id:search:{}']);
    expect(result.toolCalls?.[0]?.id).toBe('own-id');
    const failing = await provider((res) => {
      res.writeHead(429, { 'content-type': 'application/json' });
      res.end('{"error":"slow down"}');
    });
    await expect(streamToolRound({ baseUrl: failing }, { model: 'm', messages: [] }, handlers, () => 'x')).rejects.toMatchObject({ name: 'LlmError', message: expect.stringContaining('HTTP 429') });
  });
});
