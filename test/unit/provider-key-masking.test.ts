/**
 * A provider (or a proxy in front of it) that refuses a key often quotes it back:
 * `Incorrect API key provided: Bearer sk-…`. The errors built from its answer reach callers
 * (share-link visitors included) and the log, so the key that was sent is masked first.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completeChat, streamChat } from '../../src/infra/llm-stream.js';
import { withoutKey } from '../../src/infra/provider-client.js';
import { postProviderJson } from '../../src/infra/provider-http.js';

const KEY = 'sk-proj-Abc123Def456Ghi789Jkl012';

describe('withoutKey', () => {
  it.each([
    ['the whole key', `Incorrect API key provided: ${KEY}.`, 'Incorrect API key provided: [redacted].'],
    ['in a Bearer header', `bad authorization: Bearer ${KEY}`, 'bad authorization: Bearer [redacted]'],
    ['twice', `${KEY} / ${KEY}`, '[redacted] / [redacted]'],
    ['a prefix of 8+ characters cut with an ellipsis', `Incorrect API key provided: ${KEY.slice(0, 12)}…`, 'Incorrect API key provided: [redacted]…'],
    ['a suffix of 8+ characters', `key ending ****${KEY.slice(-8)} refused`, 'key ending ****[redacted] refused'],
    ['a prefix and suffix around stars', `${KEY.slice(0, 8)}****${KEY.slice(-10)}`, '[redacted]****[redacted]'],
    ['inside JSON', JSON.stringify({ error: { message: `Bearer ${KEY}` } }), JSON.stringify({ error: { message: 'Bearer [redacted]' } })],
    ['7 characters of it (too short to identify) kept', `prefix ${KEY.slice(0, 7)}… refused`, `prefix ${KEY.slice(0, 7)}… refused`],
    ['text without it unchanged', 'Rate limit reached for gpt-4o', 'Rate limit reached for gpt-4o'],
  ])('%s', (_case, text, expected) => {
    expect(withoutKey(text, KEY)).toBe(expected);
  });

  it('masks a short key whole, and leaves the text alone when no key was sent', () => {
    expect(withoutKey('Incorrect API key provided: Bearer sk-fake', 'sk-fake')).toBe('Incorrect API key provided: Bearer [redacted]');
    expect(withoutKey(`Bearer ${KEY}`, undefined)).toBe(`Bearer ${KEY}`);
    expect(withoutKey(`Bearer ${KEY}`, '')).toBe(`Bearer ${KEY}`);
  });
});

describe('provider errors never carry the key that was sent', () => {
  let server: Server;
  let url: string;
  /** A provider answering 401 with the Authorization it received, as JSON or as text (`?text`). */
  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      req.once('end', () => {
        const echoed = `Incorrect API key provided: ${String(req.headers.authorization)} (${String(req.headers.authorization).slice(7, 19)}…)`;
        if (req.url?.includes('text')) {
          res.writeHead(401, { 'content-type': 'text/plain' });
          res.end(echoed);
        } else {
          res.writeHead(401, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: { message: echoed } }));
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const messageOf = (promise: Promise<unknown>) => promise.then(() => '', (error: Error) => error.message);
  const expectMasked = (message: string) => {
    expect(message).toMatch(/HTTP 401/);
    expect(message).toContain('Bearer [redacted]');
    expect(message).not.toContain(KEY.slice(0, 8));
    expect(message).not.toContain(KEY.slice(-8));
  };

  it('chat completions (JSON and streamed)', async () => {
    const request = { model: 'm', messages: [{ role: 'user' as const, content: 'hi' }] };
    for (const baseUrl of [url, `${url}/text`]) {
      expectMasked(await messageOf(completeChat({ baseUrl, apiKey: KEY }, request)));
      expectMasked(await messageOf(streamChat({ baseUrl, apiKey: KEY }, request, () => {})));
    }
  });

  it('embeddings and rerank (postProviderJson), from the JSON message and from plain text', async () => {
    for (const target of [`${url}/embeddings`, `${url}/text/embeddings`]) {
      expectMasked(await messageOf(postProviderJson({ url: target, body: { input: ['x'] }, apiKey: KEY, timeoutMs: 5_000, label: 'embedding model e' })));
    }
  });
});
