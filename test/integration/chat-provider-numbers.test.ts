import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countTokens } from '../../src/domain/token-count.js';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { ok } from './apps-helpers.js';
import { chain, createPublishedApp, simpleChatGraph, startChatApp } from './chat-helpers.js';

/**
 * Numbers and text cuts between the chat nodes and the model provider: the `max_tokens` sent is
 * a whole number of at least 1 whatever a node's input says, a provider's `usage` counts that
 * are not numbers are not added or billed, and the chat title never ends in half an emoji.
 */
let t: TestApp;
let fake: FakeOpenAi;
let tok: string;

const completions = (payload: Record<string, unknown>) => t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: authHeaders(tok), payload });
const lastMaxTokens = () => (fake.requests.filter((r) => r.path === '/v1/chat/completions').at(-1)!.body as { max_tokens: unknown }).max_tokens;

/** A model node of `flowNodeType` asking the fake model with the `maxToken` input given. */
const modelNode = (nodeId: string, flowNodeType: string, name: string, maxToken: unknown) => ({
  nodeId,
  flowNodeType,
  name,
  inputs: [
    { key: 'model', value: 'fake-llm' },
    { key: 'maxToken', value: maxToken },
    { key: 'userChatInput', value: ['start', 'userChatInput'] },
  ],
  outputs: [{ id: 'answerText', key: 'answerText' }],
});
const chatNode = (maxToken: unknown) => modelNode('ai', 'chatNode', 'AI chat', maxToken);
/** start → a tools node with no tools attached (one model round). */
const toolsGraph = (maxToken: unknown) => chain(modelNode('agent', 'tools', 'Agent', maxToken));

beforeAll(async () => {
  ({ t, fake } = await startChatApp());
  await createUser(t, { username: 'numbers', password: 'password-n1' });
  tok = await login(t, 'numbers', 'password-n1');
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('max_tokens sent to the provider', () => {
  it.each([
    [-5, 4000],
    [2.5, 2],
    ['0.5', 4000],
    ['abc', 4000],
    [99999, 4000],
  ])('a tools node with maxToken %j sends %j', async (maxToken, expected) => {
    const appId = await createPublishedApp(t, tok, `Agent ${maxToken}`, toolsGraph(maxToken));
    const res = await completions({ appId, messages: [{ role: 'user', content: 'hello' }] });
    expect(res.statusCode, res.body).toBe(200);
    expect(lastMaxTokens()).toBe(expected);
  });

  it.each([
    [2.5, 2],
    ['1000.7', 1000],
    [-5, 200],
  ])('an AI chat node with maxToken %j sends %j', async (maxToken, expected) => {
    const appId = await createPublishedApp(t, tok, `Chat ${maxToken}`, chain(chatNode(maxToken)));
    const res = await completions({ appId, messages: [{ role: 'user', content: 'hello' }] });
    expect(res.statusCode, res.body).toBe(200);
    expect(lastMaxTokens()).toBe(expected);
  });
});

describe('usage counts the provider reports', () => {
  it.each([
    ['text', '12'],
    ['negative', -1000],
    ['null', null],
  ])('a %s prompt_tokens is estimated instead, never added as it is', async (name, promptTokens) => {
    fake.route('POST', '/v1/chat/completions', () => ({
      json: { choices: [{ message: { role: 'assistant', content: 'Fine.' } }], usage: { prompt_tokens: promptTokens, completion_tokens: 5 } },
    }));
    try {
      const chatApp = await createPublishedApp(t, tok, `Usage chat ${name}`, chain(chatNode(undefined)));
      const chat = await completions({ appId: chatApp, detail: true, messages: [{ role: 'user', content: 'hello there' }] });
      expect(chat.statusCode, chat.body).toBe(200);
      const node = chat.json().responseData.find((r: { moduleType: string }) => r.moduleType === 'chatNode');
      expect(typeof node.tokens).toBe('number');
      expect(node.tokens).toBeGreaterThan(5);
      expect(node.tokens).toBeLessThan(100);

      const toolApp = await createPublishedApp(t, tok, `Usage agent ${name}`, toolsGraph(undefined));
      const agent = await completions({ appId: toolApp, detail: true, messages: [{ role: 'user', content: 'hello there' }] });
      expect(agent.statusCode, agent.body).toBe(200);
      const tools = agent.json().responseData.find((r: { moduleType: string }) => r.moduleType === 'tools');
      expect(typeof tools.toolCallTokens).toBe('number');
      expect(tools.toolCallTokens).toBeGreaterThan(5);
      expect(tools.toolCallTokens).toBeLessThan(100);
      expect(Number.isFinite(tools.totalPoints) && tools.totalPoints > 0).toBe(true);
    } finally {
      fake.unroute('POST', '/v1/chat/completions');
    }
  });
});

describe('a provider that reports no usage', () => {
  it('has the chat node and the tools node estimate the same prompt and answer alike (one estimate, of the texts)', async () => {
    fake.route('POST', '/v1/chat/completions', () => ({ json: { choices: [{ message: { role: 'assistant', content: 'Fine.' } }] } }));
    try {
      const chatApp = await createPublishedApp(t, tok, 'No usage chat', chain(chatNode(undefined)));
      const chat = await completions({ appId: chatApp, detail: true, messages: [{ role: 'user', content: 'hello there' }] });
      expect(chat.statusCode, chat.body).toBe(200);
      const toolApp = await createPublishedApp(t, tok, 'No usage agent', toolsGraph(undefined));
      const agent = await completions({ appId: toolApp, detail: true, messages: [{ role: 'user', content: 'hello there' }] });
      expect(agent.statusCode, agent.body).toBe(200);
      const node = chat.json().responseData.find((r: { moduleType: string }) => r.moduleType === 'chatNode');
      const tools = agent.json().responseData.find((r: { moduleType: string }) => r.moduleType === 'tools');
      const expected = countTokens('hello there') + countTokens('Fine.');
      expect(node.tokens).toBe(expected);
      expect(tools.toolCallTokens).toBe(expected);
    } finally {
      fake.unroute('POST', '/v1/chat/completions');
    }
  });
});

describe('chat title', () => {
  it('is cut at 20 characters without splitting an emoji', async () => {
    const appId = await createPublishedApp(t, tok, 'Titles', simpleChatGraph);
    const res = await completions({ appId, chatId: 'emoji-title', messages: [{ role: 'user', content: `${'a'.repeat(19)}😀 tail` }] });
    expect(res.statusCode, res.body).toBe(200);
    const histories = (await ok(t, tok, 'POST', '/core/chat/getHistories', { appId })) as { chatId: string; title: string }[];
    expect(histories.find((chat) => chat.chatId === 'emoji-title')?.title).toBe('a'.repeat(19));
  });
});
