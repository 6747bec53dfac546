/**
 * A small local HTTP server speaking the OpenAI-compatible model protocols (embeddings,
 * rerank, chat completions) for tests of the provider clients. Each test sets `handler` to
 * decide the answer; every request is recorded with its path, headers and JSON body.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: unknown;
}

export interface FakeAnswer {
  status?: number;
  json?: unknown;
  /** Raw body text (sent instead of json). */
  text?: string;
  /** Wait before answering (to exercise timeouts). */
  delayMs?: number;
}

export type FakeHandler = (request: RecordedRequest) => FakeAnswer | Promise<FakeAnswer>;

export interface FakeModelProvider {
  /** e.g. http://127.0.0.1:PORT/v1 */
  baseUrl: string;
  requests: RecordedRequest[];
  handler: FakeHandler;
  close(): Promise<void>;
}

/** A deterministic embedding for tests: letter counts, so texts sharing letters are similar. */
export function letterVector(text: string, dimensions = 8): number[] {
  const vector = new Array<number>(dimensions).fill(0);
  for (const char of text.toLowerCase()) {
    const code = char.charCodeAt(0);
    if (code >= 97 && code <= 122) vector[(code - 97) % dimensions]! += 1;
  }
  return vector;
}

export const openAiEmbeddingAnswer = (inputs: string[], dimensions = 8): FakeAnswer => ({
  json: {
    object: 'list',
    data: inputs.map((input, index) => ({ object: 'embedding', index, embedding: letterVector(input, dimensions) })),
    model: 'fake-embedding',
    usage: { prompt_tokens: inputs.length * 3, total_tokens: inputs.length * 3 },
  },
});

export async function startFakeModelProvider(handler: FakeHandler = () => ({ status: 404, json: { error: { message: 'no handler' } } })): Promise<FakeModelProvider> {
  const requests: RecordedRequest[] = [];
  const state = { handler };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: unknown = raw;
      try {
        body = raw ? JSON.parse(raw) : undefined;
      } catch {
        // keep the raw text
      }
      const recorded: RecordedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body };
      requests.push(recorded);
      try {
        const answer = await state.handler(recorded);
        if (answer.delayMs) await new Promise((resolve) => setTimeout(resolve, answer.delayMs));
        if (res.destroyed) return;
        res.statusCode = answer.status ?? 200;
        if (answer.text !== undefined) {
          res.setHeader('content-type', 'text/plain');
          res.end(answer.text);
        } else {
          res.setHeader('content-type', 'application/json');
          res.end(JSON.stringify(answer.json ?? {}));
        }
      } catch (error) {
        res.statusCode = 500;
        res.end(JSON.stringify({ error: { message: (error as Error).message } }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    get handler() {
      return state.handler;
    },
    set handler(next: FakeHandler) {
      state.handler = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
