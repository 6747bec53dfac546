import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakeModelConfig, type FakeOpenAi, startFakeOpenAi } from '../helpers/fake-openai.js';
import { openTestDatabase, platformCaller, startRealServer } from '../helpers/real-process.js';
import { simpleChatGraph } from './chat-helpers.js';

/**
 * SIGTERM while a completion is being answered: the answer finishes and the process closes
 * (close hooks run: usage drained, database closed) soon after. A streamed answer sent its headers
 * before the close began, so its keep-alive connection went idle after it and held close() until
 * the shutdown timeout, which exits 1 with none of the close hooks run.
 */
let fake: FakeOpenAi;
let database: Awaited<ReturnType<typeof openTestDatabase>>;
let configPath: string;

beforeAll(async () => {
  fake = await startFakeOpenAi();
  configPath = join(await mkdtemp(join(tmpdir(), 'shutdown-streams-')), 'config.json');
  await writeFile(configPath, JSON.stringify(fakeModelConfig(fake.baseUrl)));
  database = await openTestDatabase();
  // A slow provider: the answer is still on its way when the signal comes.
  fake.route('POST', '/v1/chat/completions', async (request) => {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    if (!(request.body as { stream?: boolean }).stream) {
      return { json: { choices: [{ message: { role: 'assistant', content: 'slow answer' } }], usage: { prompt_tokens: 1, completion_tokens: 1 } } };
    }
    return {
      stream: async (res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(`data: ${JSON.stringify({ choices: [{ delta: { content: 'slow ' } }] })}\n\n`);
        await new Promise((resolve) => setTimeout(resolve, 300));
        res.end(`data: ${JSON.stringify({ choices: [{ delta: { content: 'stream' } }] })}\n\ndata: [DONE]\n\n`);
      },
    };
  });
}, 60_000);

afterAll(async () => {
  await database?.close();
  await fake?.close();
});

describe.each([
  ['a streamed', true],
  ['a JSON', false],
])('SIGTERM during %s completion', (_kind, stream) => {
  it('answers it, then closes cleanly well before the shutdown timeout', async () => {
    const server = await startRealServer(database.uri, { MODEL_CONFIG_PATH: configPath, SSRF_ALLOW_PRIVATE: 'true', TRAINING_WORKER: 'false', SHUTDOWN_TIMEOUT_MS: '20000' });
    const root = await platformCaller(server);
    const appId = await root.ok<string>('POST', '/core/app/create', { name: 'Slow', type: 'advanced', modules: simpleChatGraph.nodes, edges: simpleChatGraph.edges, chatConfig: simpleChatGraph.chatConfig });
    await root.ok('POST', `/core/app/version/publish?appId=${appId}`, { ...simpleChatGraph, isPublish: true, versionName: 'v1' });
    const key = await root.ok<string>('POST', '/support/openapi/create', { name: `shutdown-${stream}` });
    const answer = fetch(`${server.baseUrl}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ appId, chatId: `shutdown-${stream}`, stream, messages: [{ role: 'user', content: 'hello' }] }),
    }).then(async (response) => ({ status: response.status, text: await response.text() }));
    await new Promise((resolve) => setTimeout(resolve, 400));
    const signalled = Date.now();
    // stop() sends SIGTERM and waits (SIGKILL only past its grace, longer than the timeout).
    const stopped = server.stop(30_000);
    const done = await answer;
    await stopped;
    expect(done.status, done.text).toBe(200);
    expect(done.text).toContain(stream ? 'stream' : 'slow answer');
    expect(server.logs()).toContain('"msg":"closed"');
    expect(server.logs()).not.toContain('shutdown timed out');
    // Not a timing assertion of speed: a hold until the 20 s timeout is what this tells apart.
    expect(Date.now() - signalled).toBeLessThan(15_000);
  }, 60_000);
});
