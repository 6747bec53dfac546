import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { completeChat, LlmError, streamChat } from '../../src/infra/llm-stream.js';
import { ConnectionError, ProviderReplyError, providerRequest } from '../../src/infra/provider-client.js';
import { ProviderError, postProviderJson } from '../../src/infra/provider-http.js';

interface TestServer {
  url: string;
  connections: number;
  /** Resolves when the server sees the socket of its next request close. */
  closed: Promise<void>;
}

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<TestServer> {
  let sawClose: () => void = () => {};
  const state: TestServer = {
    url: '',
    connections: 0,
    closed: new Promise<void>((resolve) => {
      sawClose = resolve;
    }),
  };
  const server = createServer((req, res) => {
    req.socket.once('close', () => sawClose());
    // Read the request body first, as a provider would.
    req.resume();
    req.once('end', () => handler(req, res));
  });
  server.on('connection', () => {
    state.connections += 1;
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return state;
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const errorOf = async (promise: Promise<unknown>) => promise.then(() => undefined, (error: unknown) => error as Error);
// Lets the agent take the finished socket back before the next request (ordering, not timing).
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('providerRequest', () => {
  it('reuses one keep-alive socket for sequential requests', async () => {
    const server = await serve((_req, res) => res.end('{"ok":true}'));
    const first = await providerRequest(`${server.url}/a`, { method: 'POST', body: '{}' });
    expect(await first.json()).toEqual({ ok: true });
    await nextTurn();
    const second = await providerRequest(`${server.url}/b`, { method: 'POST', body: '{}' });
    expect(await second.text()).toBe('{"ok":true}');
    expect(server.connections).toBe(1);
  });

  it('sends the headers fetch sent and the body bytes as given', async () => {
    let seen: IncomingMessage | undefined;
    const server = await serve((req, res) => {
      seen = req;
      res.end();
    });
    const body = JSON.stringify({ text: 'héllo' });
    const response = await providerRequest(`${server.url}/v1/x`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer k' }, body });
    response.discard();
    expect(seen?.method).toBe('POST');
    expect(seen?.headers).toMatchObject({
      'content-type': 'application/json',
      authorization: 'Bearer k',
      accept: '*/*',
      'accept-encoding': 'gzip, deflate',
      'content-length': String(Buffer.byteLength(body)),
    });
  });

  it('rejects with the AbortError when the signal aborts before the answer, and closes the socket', async () => {
    let requested: () => void = () => {};
    const arrived = new Promise<void>((resolve) => {
      requested = resolve;
    });
    const server = await serve(() => requested());
    const controller = new AbortController();
    const pending = errorOf(providerRequest(`${server.url}/slow`, { method: 'POST', body: '{}', signal: controller.signal }));
    await arrived;
    controller.abort();
    expect((await pending)?.name).toBe('AbortError');
    await server.closed;
  });

  it('rejects the body read with the AbortError when the signal aborts mid-stream, and closes the socket', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: 1\n\n');
    });
    const controller = new AbortController();
    const response = await providerRequest(`${server.url}/stream`, { signal: controller.signal });
    const iterator = response.chunks()[Symbol.asyncIterator]();
    expect(String((await iterator.next()).value)).toBe('data: 1\n\n');
    controller.abort();
    expect((await errorOf(iterator.next()))?.name).toBe('AbortError');
    await server.closed;
  });

  it('rejects a whole-body read with the AbortError when the signal aborts mid-body, and closes the socket', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      res.write('{"partial":');
    });
    const controller = new AbortController();
    const response = await providerRequest(`${server.url}/slow`, { signal: controller.signal });
    const reading = errorOf(response.text());
    setTimeout(() => controller.abort(), 20);
    expect((await reading)?.name).toBe('AbortError');
    await server.closed;
  });

  it('rejects a whole-body read when the provider cuts the body short', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      res.write('{"partial":', () => res.socket?.destroy());
    });
    const response = await providerRequest(`${server.url}/cut`);
    // The provider's failure (a 502), never the reset socket's `aborted`, which reads as the caller's upload cut short.
    const error = await errorOf(response.json());
    expect(error).toBeInstanceOf(ProviderReplyError);
    expect(error?.message).toMatch(/broke off its answer/);
  });

  it('rejects a streamed read as the provider failure when the provider cuts the stream short', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: 1\n\n', () => res.socket?.destroy());
    });
    const response = await providerRequest(`${server.url}/cut-stream`);
    const iterator = response.chunks()[Symbol.asyncIterator]();
    expect(String((await iterator.next()).value)).toBe('data: 1\n\n');
    const error = await errorOf(iterator.next());
    expect(error).toBeInstanceOf(ProviderReplyError);
    expect(error?.message).toMatch(/broke off its answer/);
  });

  it('joins a body sent in several chunks, and refuses to read it twice', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"data":');
      setTimeout(() => res.end('[1,2,3]}'), 10);
    });
    const response = await providerRequest(server.url);
    expect(await response.json()).toEqual({ data: [1, 2, 3] });
    expect((await errorOf(response.buffer()))?.message).toMatch(/already been read/);
  });

  it('reports a refused connection as a ConnectionError carrying the code', async () => {
    const error = await errorOf(providerRequest(`http://127.0.0.1:${await closedPort()}/`));
    expect(error).toBeInstanceOf(ConnectionError);
    expect((error as ConnectionError).code).toBe('ECONNREFUSED');
  });

  it('decodes a gzip answer', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-encoding': 'gzip', 'content-type': 'application/json' });
      res.end(gzipSync('{"data":[1,2]}'));
    });
    expect(await (await providerRequest(server.url)).json()).toEqual({ data: [1, 2] });
  });

  it('stops reading a compressed answer that inflates past the cap, whole or streamed, and for the JSON helper', async () => {
    // 100 MB of zeros is about 100 KB gzipped: without a cap it would all be held in memory.
    const bomb = gzipSync(Buffer.alloc(100 * 1024 * 1024));
    expect(bomb.length).toBeLessThan(200 * 1024);
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-encoding': 'gzip', 'content-type': 'application/json' });
      res.end(bomb);
    });
    const whole = await errorOf((await providerRequest(server.url)).text());
    expect(whole).toBeInstanceOf(ProviderReplyError);
    expect(whole?.message).toMatch(/answered more than 67108864 bytes/);
    let streamed = 0;
    const streaming = await errorOf(
      (async () => {
        for await (const chunk of (await providerRequest(server.url, { maxBytes: 1024 * 1024 })).chunks()) streamed += chunk.length;
      })(),
    );
    expect(streaming).toBeInstanceOf(ProviderReplyError);
    expect(streamed).toBeLessThanOrEqual(1024 * 1024);
    const json = await errorOf(postProviderJson({ url: server.url, body: {}, timeoutMs: 10_000, label: 'embedding model test' }));
    expect(json).toBeInstanceOf(ProviderError);
    expect((json as ProviderError).kind).toBe('invalid_response');
  });

  it('follows a 307 with the same method and body', async () => {
    const server = await serve((req, res) => {
      if (req.url === '/v1/embeddings/') {
        res.writeHead(307, { location: '/v1/embeddings' });
        res.end();
      } else {
        res.end(`${req.method} ${req.url} ${req.headers['content-length']}`);
      }
    });
    const response = await providerRequest(`${server.url}/v1/embeddings/`, { method: 'POST', body: '{"a":1}' });
    expect(await response.text()).toBe('POST /v1/embeddings 7');
  });

  it('discard() destroys the socket of a long unread body', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(200);
      res.write(Buffer.alloc(256 * 1024));
    });
    const response = await providerRequest(server.url);
    response.discard();
    await server.closed;
  });

  it('discard() drains a short unread body and keeps its socket', async () => {
    const server = await serve((_req, res) => res.end('{"error":"ignored"}'));
    (await providerRequest(server.url)).discard();
    await nextTurn();
    expect(await (await providerRequest(server.url)).text()).toBe('{"error":"ignored"}');
    expect(server.connections).toBe(1);
  });
});

describe('postProviderJson over the provider client', () => {
  const request = (url: string, timeoutMs = 2000) => postProviderJson({ url, body: { input: ['x'] }, timeoutMs, label: 'embedding model m' });

  it('maps the timeout to a ProviderError of kind timeout', async () => {
    const server = await serve(() => {}); // never answers
    const error = (await errorOf(request(`${server.url}/v1/embeddings`, 50))) as ProviderError;
    expect(error).toBeInstanceOf(ProviderError);
    expect(error.kind).toBe('timeout');
    expect(error.message).toBe('The embedding model m did not answer within 50 ms');
    await server.closed;
  });

  it('maps a refused connection to kind network with the code in the message', async () => {
    const port = await closedPort();
    const error = (await errorOf(request(`http://127.0.0.1:${port}/v1/embeddings`))) as ProviderError;
    expect(error.kind).toBe('network');
    expect(error.message).toBe(`The embedding model m is unreachable at http://127.0.0.1:${port}: ECONNREFUSED`);
  });

  it('keeps the provider message of an error status', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(429, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'Rate limit reached', type: 'requests' } }));
    });
    const error = (await errorOf(request(`${server.url}/v1/embeddings`))) as ProviderError;
    expect([error.kind, error.status, error.message]).toEqual(['http', 429, 'The embedding model m answered HTTP 429: Rate limit reached']);
  });
});

describe('chat completions over the provider client', () => {
  it('delivers SSE deltas as they arrive', async () => {
    let firstSeen: () => void = () => {};
    const seen = new Promise<void>((resolve) => {
      firstSeen = resolve;
    });
    const server = await serve(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ choices: [{ delta: { content: 'Hel' } }] })}\n\n`);
      // The second event is written only once the client has the first: a buffered body would hang here.
      await seen;
      res.write(`data: ${JSON.stringify({ choices: [{ delta: { content: 'lo' } }] })}\n\n`);
      res.write(`data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 4, completion_tokens: 2 } })}\n\ndata: [DONE]\n\n`);
      res.end();
    });
    const deltas: string[] = [];
    const result = await streamChat({ baseUrl: `${server.url}/v1` }, { model: 'm', messages: [{ role: 'user', content: 'hi' }] }, (text) => {
      deltas.push(text);
      firstSeen();
    });
    expect(deltas).toEqual(['Hel', 'lo']);
    expect(result).toEqual({ content: 'Hello', promptTokens: 4, completionTokens: 2 });
  });

  it('keeps the error messages: HTTP status with the body, unreachable with fetch wording', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end('{"error":{"message":"bad model"}}');
    });
    const request = { model: 'm', messages: [{ role: 'user' as const, content: 'hi' }] };
    const http = await errorOf(completeChat({ baseUrl: `${server.url}/v1/` }, request));
    expect(http).toBeInstanceOf(LlmError);
    expect(http?.message).toBe('The model provider answered HTTP 400: {"error":{"message":"bad model"}}');
    const refused = await errorOf(completeChat({ baseUrl: `http://127.0.0.1:${await closedPort()}/v1` }, request));
    expect(refused?.message).toBe('The model provider is unreachable: fetch failed');
  });

  it('an aborted completion rejects as LlmError with the abort message, as under fetch', async () => {
    const server = await serve(() => {});
    const controller = new AbortController();
    controller.abort();
    const error = await errorOf(completeChat({ baseUrl: server.url }, { model: 'm', messages: [] }, controller.signal));
    expect(error?.message).toBe('The model provider is unreachable: This operation was aborted');
  });
});
