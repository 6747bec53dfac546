/**
 * A local OpenAI-compatible server for chat tests: chat completions (JSON and SSE streaming),
 * embeddings, audio transcriptions and speech. Chat answers "Echo: <last user text>" unless
 * `reply` is replaced. Extra routes (hooks, messaging channels) can be added with `route`.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SeenRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: unknown;
  raw: Buffer;
}

/** A route's answer: JSON, text, or a body the route writes itself (`stream`, for answers that arrive in parts). */
type RouteAnswer = { status?: number; json?: unknown; text?: string; stream?: (res: ServerResponse) => Promise<void> };
type RouteHandler = (request: SeenRequest) => RouteAnswer | Promise<RouteAnswer>;

export interface FakeOpenAi {
  origin: string;
  baseUrl: string;
  requests: SeenRequest[];
  reply: (messages: { role: string; content: unknown }[]) => string;
  route: (method: string, path: string, handler: RouteHandler) => void;
  unroute: (method: string, path: string) => void;
  /** Resolves with the first request to `path` (now or later). */
  waitFor: (path: string) => Promise<SeenRequest>;
  close: () => Promise<void>;
}

const lastUserText = (messages: { role: string; content: unknown }[]) => {
  const last = [...messages].reverse().find((m) => m.role === 'user');
  return typeof last?.content === 'string' ? last.content : JSON.stringify(last?.content ?? '');
};

export async function startFakeOpenAi(): Promise<FakeOpenAi> {
  const requests: SeenRequest[] = [];
  const routes = new Map<string, RouteHandler>();
  const waiters: { path: string; resolve: (r: SeenRequest) => void }[] = [];
  const fake = {
    requests,
    reply: (messages: { role: string; content: unknown }[]) => `Echo: ${lastUserText(messages)}`,
  } as FakeOpenAi;

  const send = (res: ServerResponse, status: number, json: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(json));
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const raw = Buffer.concat(chunks);
      let body: unknown = raw.toString('utf8');
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        // not JSON: kept as text
      }
      const url = new URL(req.url ?? '/', 'http://x');
      const seen: SeenRequest = { method: req.method ?? 'GET', path: url.pathname, headers: req.headers, body, raw };
      requests.push(seen);
      for (const waiter of waiters.filter((w) => w.path === url.pathname)) waiter.resolve(seen);
      const custom = routes.get(`${req.method} ${url.pathname}`);
      if (custom) {
        const answer = await custom(seen);
        if (answer.stream) await answer.stream(res);
        else if (answer.text !== undefined) {
          res.writeHead(answer.status ?? 200, { 'content-type': 'text/plain' });
          res.end(answer.text);
        } else send(res, answer.status ?? 200, answer.json ?? {});
        return;
      }
      if (url.pathname === '/v1/chat/completions') {
        const request = body as { messages: { role: string; content: unknown }[]; stream?: boolean; tools?: { function: { name: string; parameters: { properties: Record<string, unknown> } } }[] };
        // With tools offered and no tool answer yet, call the first tool with the user's text.
        const firstTool = request.tools?.[0]?.function;
        if (firstTool && !request.messages.some((m) => m.role === 'tool')) {
          const arg = Object.keys(firstTool.parameters.properties)[0] ?? 'input';
          const toolCall = { id: 'call_1', type: 'function', function: { name: firstTool.name, arguments: JSON.stringify({ [arg]: lastUserText(request.messages) }) } };
          send(res, 200, { choices: [{ message: { role: 'assistant', content: null, tool_calls: [toolCall] } }], usage: { prompt_tokens: 10, completion_tokens: 5 } });
          return;
        }
        const toolAnswer = [...request.messages].reverse().find((m) => m.role === 'tool');
        const text = toolAnswer ? `Tool said: ${String(toolAnswer.content)}` : fake.reply(request.messages);
        if (!request.stream) {
          send(res, 200, { choices: [{ message: { role: 'assistant', content: text } }], usage: { prompt_tokens: 10, completion_tokens: 5 } });
          return;
        }
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const half = Math.ceil(text.length / 2);
        for (const piece of [text.slice(0, half), text.slice(half)]) {
          res.write(`data: ${JSON.stringify({ choices: [{ delta: { content: piece } }] })}\n\n`);
        }
        res.write(`data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 10, completion_tokens: 5 } })}\n\n`);
        res.end('data: [DONE]\n\n');
        return;
      }
      if (url.pathname === '/v1/embeddings') {
        send(res, 200, { data: [{ embedding: [0.1, 0.2, 0.3] }], usage: { prompt_tokens: 3, total_tokens: 3 } });
        return;
      }
      if (url.pathname === '/v1/audio/transcriptions') {
        send(res, 200, { text: raw.includes(Buffer.from('recording.mp3')) ? 'transcribed words' : 'unnamed audio' });
        return;
      }
      if (url.pathname === '/v1/audio/speech') {
        res.writeHead(200, { 'content-type': 'audio/mpeg' });
        res.end(Buffer.from('ID3-fake-mp3'));
        return;
      }
      send(res, 404, { error: 'unknown path' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  fake.origin = `http://127.0.0.1:${port}`;
  fake.baseUrl = `${fake.origin}/v1`;
  fake.route = (method, path, handler) => routes.set(`${method} ${path}`, handler);
  fake.unroute = (method, path) => routes.delete(`${method} ${path}`);
  fake.waitFor = (path) => {
    const done = requests.find((r) => r.path === path);
    if (done) return Promise.resolve(done);
    return new Promise((resolve) => waiters.push({ path, resolve }));
  };
  fake.close = () => new Promise((resolve) => server.close(() => resolve()));
  return fake;
}

/** A model config file content pointing every model at the fake server. */
export function fakeModelConfig(baseUrl: string) {
  return {
    llmModels: [
      { model: 'fake-llm', name: 'Fake LLM', maxContext: 16000, maxResponse: 4000, quoteMaxToken: 2000, charsPointsPrice: 100, vision: true, requestUrl: `${baseUrl}/chat/completions`, requestAuth: 'sk-fake' },
    ],
    // Priced per 60 s of audio (whisper) and per 1000 characters (speech).
    whisperModel: { model: 'whisper-1', name: 'Whisper', charsPointsPrice: 6, requestUrl: baseUrl },
    audioSpeechModels: [{ model: 'tts-1', name: 'TTS', charsPointsPrice: 2, voices: [{ label: 'Alloy', value: 'alloy' }], requestUrl: baseUrl }],
  };
}
