import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { apiKeyHeaders, createApiKey, createUser, login } from '../helpers/platform.js';
import { branchGraph, createPublishedApp, simpleChatGraph, sseFrames, startChatApp } from './chat-helpers.js';

/**
 * What OpenAI-style clients really send to /api/v1/chat/completions: SDK defaults, nulls for
 * absent fields, FastGPT extras in odd types, and OpenAI parameters the app's workflow decides.
 */
let t: TestApp;
let fake: FakeOpenAi;
let key: string;
let branchKey: string;
let ownerToken: string;

const completions = (headers: Record<string, string>, payload: unknown) =>
  t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: { ...headers, 'content-type': 'application/json', 'user-agent': 'OpenAI/Python 1.54.3' }, payload: JSON.stringify(payload) });

const lastModelRequest = () => fake.requests.filter((r) => r.path === '/v1/chat/completions').at(-1)!.body as Record<string, unknown>;

beforeAll(async () => {
  // Stands for the CORS and security-header plugins: headers set by hooks before the handler.
  ({ t, fake } = await startChatApp(undefined, (app) => {
    app.addHook('onRequest', async (request, reply) => {
      if (request.headers.origin) reply.header('access-control-allow-origin', request.headers.origin).header('vary', 'Origin');
      reply.header('x-content-type-options', 'nosniff');
    });
  }));
  await createUser(t, { username: 'sdk-user', password: 'password-s1' });
  const token = await login(t, 'sdk-user', 'password-s1');
  ownerToken = token;
  const appId = await createPublishedApp(t, token, 'SDK bot', simpleChatGraph);
  key = await createApiKey(t, token, { name: 'sdk', appId });
  branchKey = await createApiKey(t, token, { name: 'branch', appId: await createPublishedApp(t, token, 'Branch bot', branchGraph) });
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('v1/chat/completions with what OpenAI clients send', () => {
  it('an OpenAI-SDK body: nulls for absent fields, detail 1, empty responseChatItemId, tools and sampling fields ignored', async () => {
    const chatsBefore = await t.app.mongo.db.collection('chats').countDocuments();
    const body = {
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'You are a helpful assistant.', name: null },
        { role: 'user', content: 'Hi', name: null },
        // A previous answer dumped from the SDK's response object (pydantic model_dump).
        { role: 'assistant', content: 'Hello! How can I help?', name: null, function_call: null, tool_calls: null, refusal: null, audio: null },
        { role: 'user', content: 'What are your opening hours?', name: null },
      ],
      chatId: null,
      variables: null,
      detail: 1,
      responseChatItemId: '',
      tools: [{ type: 'function', function: { name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }],
      tool_choice: 'auto',
      parallel_tool_calls: true,
      user: 'end-user-1234',
      n: 1,
      seed: 42,
      temperature: 0.2,
      top_p: 1,
      max_tokens: 512,
      presence_penalty: 0,
      frequency_penalty: 0,
      logit_bias: {},
      logprobs: false,
      top_logprobs: null,
      response_format: { type: 'text' },
      stop: null,
      stream: false,
      stream_options: null,
      store: false,
    };
    const res = await completions(apiKeyHeaders(key), body);
    expect(res.statusCode, res.body).toBe(200);
    const answer = res.json();
    expect(answer.choices[0]).toMatchObject({ message: { role: 'assistant', content: 'Echo: What are your opening hours?' }, finish_reason: 'stop', index: 0 });
    expect(answer.responseData.map((r: { moduleType: string }) => r.moduleType)).toEqual(['workflowStart', 'chatNode']);
    // The app's workflow decides the model call: the client's tools and sampling never reach it.
    const sent = lastModelRequest();
    expect(sent.tools).toBeUndefined();
    expect(sent.seed).toBeUndefined();
    expect(sent.user).toBeUndefined();
    expect((sent.messages as { content: string }[]).map((m) => m.content)).toEqual(['Be brief.', 'You are a helpful assistant.', 'Hi', 'Hello! How can I help?', 'What are your opening hours?']);
    // chatId null is a stateless call: nothing saved.
    expect(await t.app.mongo.db.collection('chats').countDocuments()).toBe(chatsBefore);
  });

  it('a numeric chatId is a chat id in text form; detail "true" is true', async () => {
    const first = await completions(apiKeyHeaders(key), { chatId: 20240601, detail: 'true', variables: { name: 'Ann' }, messages: [{ role: 'user', content: 'remember me' }] });
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json()).toMatchObject({ id: '20240601', newVariables: { name: 'Ann' } });
    expect(await t.app.mongo.db.collection('chats').findOne({ chatId: '20240601' })).toMatchObject({ source: 'api', variables: { name: 'Ann' } });
    await completions(apiKeyHeaders(key), { chatId: '20240601', messages: [{ role: 'user', content: 'again' }] });
    const contents = (lastModelRequest().messages as { content: string }[]).map((m) => m.content);
    expect(contents).toEqual(['Be brief.', 'remember me', 'Echo: remember me', 'again']);
  });

  it('streams with stream_options, and reads the developer role as system', async () => {
    const res = await completions(apiKeyHeaders(key), {
      model: 'o1-mini',
      stream: true,
      stream_options: { include_usage: true },
      detail: false,
      messages: [
        { role: 'developer', content: 'Answer in English.' },
        { role: 'user', content: 'stream it' },
      ],
    });
    expect(res.statusCode, res.body).toBe(200);
    const frames = sseFrames(res.body);
    const chunks = frames.filter((f) => f.data !== '[DONE]').map((f) => JSON.parse(f.data));
    const text = chunks
      .filter((chunk) => chunk.choices.length > 0)
      .map((chunk) => chunk.choices[0].delta.content ?? '')
      .join('');
    expect(text).toBe('Echo: stream it');
    expect(frames.at(-1)!.data).toBe('[DONE]');
    // include_usage: one last chunk before [DONE] with no choices and the turn's tokens (the fake model's 10 + 5).
    expect(chunks.at(-1)).toEqual({ id: chunks[0].id, object: 'chat.completion.chunk', created: chunks[0].created, model: '', choices: [], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } });
    // One id on every chunk, never empty (openai v6's stream helper reads the usage only from chunks with an id).
    expect(chunks[0].id).toMatch(/^chatcmpl-\w+/);
    expect(new Set(chunks.map((chunk) => chunk.id)).size).toBe(1);
    expect(chunks.filter((chunk) => chunk.usage !== undefined)).toHaveLength(1);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect((lastModelRequest().messages as { role: string; content: string }[]).slice(0, 2)).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'system', content: 'Answer in English.' },
    ]);
  });

  it('streams no usage chunk unless asked, and counts the tokens of every model call of the turn', async () => {
    const plain = sseFrames((await completions(apiKeyHeaders(key), { stream: true, messages: [{ role: 'user', content: 'no usage' }] })).body);
    expect(plain.filter((f) => f.data !== '[DONE]').every((f) => JSON.parse(f.data).choices.length === 1)).toBe(true);
    const off = sseFrames((await completions(apiKeyHeaders(key), { stream: true, stream_options: { include_usage: false }, messages: [{ role: 'user', content: 'no usage' }] })).body);
    expect(off).toHaveLength(plain.length);
    // Two model calls in a row (the second answers the first's answer): 2 × (10 + 5).
    const [, , ai] = simpleChatGraph.nodes as { nodeId: string; inputs: { key: string; value: unknown }[] }[];
    const second = { ...ai, nodeId: 'ai2', name: 'AI again', inputs: ai!.inputs.map((input) => (input.key === 'userChatInput' ? { ...input, value: ['ai', 'answerText'] } : input)) };
    const twice = { ...simpleChatGraph, nodes: [...simpleChatGraph.nodes, second], edges: [...simpleChatGraph.edges, { source: 'ai', sourceHandle: 'ai-source-right', target: 'ai2', targetHandle: 'ai2-target-left' }] };
    const twiceKey = await createApiKey(t, ownerToken, { name: 'twice', appId: await createPublishedApp(t, ownerToken, 'Twice bot', twice) });
    const res = await completions(apiKeyHeaders(twiceKey), { stream: true, stream_options: { include_usage: 'true' }, messages: [{ role: 'user', content: 'which way' }] });
    const last = sseFrames(res.body).filter((f) => f.data !== '[DONE]').at(-1)!;
    expect(JSON.parse(last.data).usage).toEqual({ prompt_tokens: 20, completion_tokens: 10, total_tokens: 30 });
    expect((await completions(apiKeyHeaders(key), { stream: true, stream_options: 'usage', messages: [{ role: 'user', content: 'x' }] })).json().message).toMatch(/stream_options/);
  });

  it('still refuses what cannot be read, naming the field', async () => {
    const cases: [unknown, RegExp][] = [
      [{ chatId: { $gt: '' }, messages: [{ role: 'user', content: 'x' }] }, /chatId/],
      [{ detail: 'sometimes', messages: [{ role: 'user', content: 'x' }] }, /detail/],
      [{ variables: 'name=Ann', messages: [{ role: 'user', content: 'x' }] }, /variables/],
      [{ messages: [{ role: 'user', content: 'x', name: 42 }] }, /name/],
    ];
    for (const [payload, message] of cases) {
      const res = await completions(apiKeyHeaders(key), payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(res.json().message).toMatch(message);
    }
  });
});

describe('streams from a browser on another origin', () => {
  it('keep the headers the hooks set (reflected origin) instead of a fixed *', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/chat/completions',
      headers: { ...apiKeyHeaders(key), origin: 'https://chat-ui.example' },
      payload: { stream: true, messages: [{ role: 'user', content: 'from the browser' }] },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toContain('text/event-stream');
    expect(res.headers['access-control-allow-origin']).toBe('https://chat-ui.example');
    expect(res.headers.vary).toBe('Origin');
    // The security headers too: they are reply headers, which the hijacked stream carries over.
    expect(res.headers['content-security-policy']).toBe("default-src 'none';frame-ancestors 'none'");
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-frame-options']).toBe('DENY');
  });
});

describe('answer node', () => {
  it('streams its text on a new line but records textOutput without the leading newline', async () => {
    const res = await completions(apiKeyHeaders(branchKey), { detail: true, messages: [{ role: 'user', content: 'hello' }] });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.choices[0].message.content).toBe('\nHi guest');
    const answer = body.responseData.find((r: { moduleType: string }) => r.moduleType === 'answerNode');
    expect(answer.textOutput).toBe('Hi guest');
  });
});
