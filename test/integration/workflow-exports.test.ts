/**
 * FastGPT 4.8.10 exports (test/fixtures/workflows, in the shapes its editor stores) imported
 * and published as that editor does, then run through /api/v1/chat/completions with detail.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { ok } from './apps-helpers.js';
import { sseFrames, startChatApp } from './chat-helpers.js';
import { importWorkflow, loadWorkflow, ranNodes, responseOf, setInput, startJsonService } from './workflow-helpers.js';

let t: TestApp;
let fake: FakeOpenAi;
let tok: string;
let service: Awaited<ReturnType<typeof startJsonService>>;

const completions = (payload: Record<string, unknown>) => t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: authHeaders(tok), payload });
const chatCalls = () => fake.requests.filter((r) => r.path === '/v1/chat/completions').map((r) => r.body as { temperature: number; messages: { role: string; content: string }[] });

beforeAll(async () => {
  ({ t, fake } = await startChatApp());
  await createUser(t, { username: 'importer', password: 'password-i1' });
  tok = await login(t, 'importer', 'password-i1');
  service = await startJsonService(({ url, body }) => {
    if (url.startsWith('/page')) return '<html><body><h1>Opening hours</h1><p>Mon-Fri 9-17</p></body></html>';
    const key = (body as { searchKey?: unknown } | null)?.searchKey;
    return { prompt: `Results for ${String(key)}: sunny, 21 degrees` };
  });
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
  await service?.close();
});

describe('answer node texts (4.8.10 fixed opening and ending)', () => {
  it('sends a stored backslash-n as it is, in the answer and the stream, as the reference', async () => {
    const appId = await importWorkflow(t, tok, 'Fixed opening and ending', loadWorkflow('fixed-opening-ending'));
    const res = await completions({ appId, detail: true, messages: [{ role: 'user', content: 'opening hours?' }] });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(ranNodes(body)).toEqual(['448745', 'openingReply', 'aiChatNode01', 'endingReply']);
    const content = body.choices[0].message.content as string;
    expect(content).toMatch(/^\nThanks for asking\.\\nHere is what I found:Echo: opening hours\?\n\\n---\\nAsked at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \w+\. Anything else\?$/);
    expect(responseOf(body, 'openingReply')?.textOutput).toBe('Thanks for asking.\\nHere is what I found:');
    // The editor's 0–10 temperature is scaled onto the model's range (5 → half of it).
    expect(chatCalls().at(-1)!.temperature).toBe(0.5);

    const streamed = await completions({ appId, stream: true, detail: true, messages: [{ role: 'user', content: 'again' }] });
    const fast = sseFrames(streamed.body).filter((f) => f.event === 'fastAnswer').map((f) => JSON.parse(f.data).choices[0].delta.content as string);
    expect(fast[0]).toBe('\nThanks for asking.\\nHere is what I found:');
  });
});

describe('the AI chat node asks the model for max_tokens as the reference computes them', () => {
  it('200 for 0, the value within maxResponse, and what the context window leaves after a long prompt', async () => {
    const sentMaxTokens = () => (fake.requests.filter((r) => r.path === '/v1/chat/completions').at(-1)!.body as { max_tokens: number }).max_tokens;
    const cases: [unknown, string, number][] = [
      [0, 'short question', 200],
      [3000, 'short question', 3000],
      // fake-llm: maxContext 16000, maxResponse 4000; a prompt of about 14,000 tokens (countTokens: one a word) leaves about 2,000.
      [4000, 'word '.repeat(14_000), -1],
    ];
    for (const [maxToken, question, expected] of cases) {
      const workflow = loadWorkflow('fixed-opening-ending');
      setInput(workflow, 'aiChatNode01', 'maxToken', maxToken);
      const appId = await importWorkflow(t, tok, `max tokens ${String(maxToken)}`, workflow);
      const res = await completions({ appId, detail: true, messages: [{ role: 'user', content: question }] });
      expect(res.statusCode, res.body).toBe(200);
      const asked = sentMaxTokens();
      if (expected > 0) {
        expect(asked).toBe(expected);
      } else {
        expect(asked).toBeGreaterThan(200);
        expect(asked).toBeLessThan(4000);
      }
      expect(responseOf(res.json(), 'aiChatNode01')?.maxToken).toBe(asked);
    }
  });
});

describe('chat variables kept in the system-config node (4.8.10 chatGuide template)', () => {
  it('core/chat/init lists them when chatConfig has none, and the run fills {{language}}', async () => {
    const appId = await importWorkflow(t, tok, 'Translator', loadWorkflow('chat-guide-variables'), 'simple');
    const init = await ok(t, tok, 'GET', '/core/chat/init', { appId });
    expect(init.app.chatConfig.variables).toEqual([expect.objectContaining({ key: 'language', type: 'select', required: true, enums: [{ value: 'English' }, { value: 'French' }] })]);
    expect(init.app.chatConfig.welcomeText).toBe('Hi! Which language should I translate into?');

    const res = await completions({ appId, chatId: 'guide1', detail: true, variables: { language: 'French' }, messages: [{ role: 'user', content: 'Where is the station?' }] });
    expect(res.statusCode, res.body).toBe(200);
    expect(ranNodes(res.json())).toEqual(['448745', 'loOvhld2ZTKa']);
    expect(chatCalls().at(-1)!.messages[0]).toEqual({ role: 'system', content: 'Translate my question into French; do not answer it.' });
    // The chat keeps the variable list it was started with, and its values.
    const again = await ok(t, tok, 'GET', '/core/chat/init', { appId, chatId: 'guide1' });
    expect(again.app.chatConfig.variables.map((v: { key: string }) => v.key)).toEqual(['language']);
    expect(again.variables).toEqual({ language: 'French', userId: expect.any(String) });
  });
});

describe('documented search workflow (HTTP node with the older dynamic-input key, community-textEditor)', () => {
  const extractThen = (searchKey: string | undefined) => (messages: { role: string; content: unknown }[]) => {
    const last = String([...messages].reverse().find((m) => m.role === 'user')?.content ?? '');
    if (last.includes('Extract these fields')) return JSON.stringify(searchKey === undefined ? {} : { searchKey });
    return `Echo: ${last}`;
  };

  it('posts the extracted keyword, fills the text editor plugin and answers from it', async () => {
    const workflow = loadWorkflow('search-http-legacy');
    setInput(workflow, '1ljV0oTq4zeC', 'system_httpReqUrl', `${service.url}/google_search`);
    const appId = await importWorkflow(t, tok, 'Web search', workflow);
    const original = fake.reply;
    fake.reply = extractThen('Oslo weather');
    try {
      const res = await completions({ appId, detail: true, messages: [{ role: 'user', content: 'How warm is Oslo today?' }] });
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json();
      expect(ranNodes(body)).toEqual(['448745', 'lG52GzzMm65z', 'TWD5BAqIIFaj', '1ljV0oTq4zeC', 'FYLw1BokYUad', 'EX0g9oK3sCOC']);
      expect(responseOf(body, 'TWD5BAqIIFaj')?.ifElseResult).toBe('ELSE');
      expect(service.received.at(-1)).toMatchObject({ url: '/google_search', method: 'POST', body: { searchKey: 'Oslo weather' } });
      expect(responseOf(body, 'FYLw1BokYUad')?.pluginOutput).toEqual({
        text: 'Use the data inside <data></data> as the reference for this chat; answer directly without mentioning it.\n\n<data>\nResults for Oslo weather: sunny, 21 degrees\n</data>\n\nMy question: "How warm is Oslo today?"',
      });
      expect(body.choices[0].message.content).toMatch(/^Echo: Use the data inside .*<data>\nResults for Oslo weather: sunny, 21 degrees\n<\/data>\n\nMy question: "How warm is Oslo today\?"$/s);
    } finally {
      fake.reply = original;
    }
  });

  it('answers directly when nothing was extracted (the legacy one-list ifElse takes IF)', async () => {
    const workflow = loadWorkflow('search-http-legacy');
    setInput(workflow, '1ljV0oTq4zeC', 'system_httpReqUrl', `${service.url}/google_search`);
    const appId = await importWorkflow(t, tok, 'Web search 2', workflow);
    const before = service.received.length;
    const original = fake.reply;
    fake.reply = extractThen(undefined);
    try {
      const res = await completions({ appId, detail: true, messages: [{ role: 'user', content: 'hello there' }] });
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json();
      expect(ranNodes(body)).toEqual(['448745', 'lG52GzzMm65z', 'TWD5BAqIIFaj', 'Nc6hBdb3l9Pe']);
      expect(responseOf(body, 'TWD5BAqIIFaj')?.ifElseResult).toBe('IF');
      expect(service.received.length).toBe(before);
      expect(body.choices[0].message.content).toBe('Echo: hello there');
    } finally {
      fake.reply = original;
    }
  });
});

describe('system plugins as pluginModule nodes', () => {
  it('community-getTime, -mathExprVal (its 4.8.10 input key) and -fetchUrl run and feed later nodes', async () => {
    const workflow = loadWorkflow('system-plugins');
    setInput(workflow, 'fetchUrl0001', 'url', `${service.url}/page`);
    const appId = await importWorkflow(t, tok, 'Plugins', workflow);
    const res = await completions({ appId, detail: true, messages: [{ role: 'user', content: '(2 + 3) * 4' }] });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(ranNodes(body)).toEqual(['448745', 'tGetTime0001', 'mathExpr0001', 'fetchUrl0001', 'pluginAnswer']);
    expect(responseOf(body, 'mathExpr0001')).toMatchObject({ moduleType: 'pluginModule', pluginOutput: { result: '20' } });
    expect(body.choices[0].message.content).toMatch(/^\ntime: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\nresult: 20\npage: Opening hours\s+Mon-Fri 9-17$/);
  });

  it('a system plugin is offered to the tools node and runs when the model calls it', async () => {
    const appId = await importWorkflow(t, tok, 'Calculator agent', loadWorkflow('tool-call-system-plugin'));
    const res = await completions({ appId, detail: true, messages: [{ role: 'user', content: '6 * 7' }] });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    const offered = (fake.requests.filter((r) => r.path === '/v1/chat/completions').at(-2)!.body as { tools: { function: { name: string; parameters: unknown } }[] }).tools;
    expect(offered[0]!.function).toMatchObject({ name: 'mathExpr0001', parameters: { properties: { 数学表达式: { type: 'string' } }, required: ['数学表达式'] } });
    const content = body.choices[0].message.content;
    expect(content[0]).toMatchObject({ type: 'tool', tools: [{ functionName: 'mathExpr0001', params: '{"数学表达式":"6 * 7"}', response: JSON.stringify({ result: '42' }, null, 2) }] });
    expect(content[1].text.content).toBe(`Tool said: ${JSON.stringify({ result: '42' }, null, 2)}`);
    expect(responseOf(body, 'NOgbnBzUwDgT')?.toolDetail).toEqual([expect.objectContaining({ nodeId: 'mathExpr0001', pluginOutput: { result: '42' } })]);
  });

  it('chatTest accepts a graph with system plugins (they are no team app to check)', async () => {
    const workflow = loadWorkflow('system-plugins');
    setInput(workflow, 'fetchUrl0001', 'url', `${service.url}/page`);
    const appId = await importWorkflow(t, tok, 'Plugins test', workflow);
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/core/chat/chatTest',
      headers: authHeaders(tok),
      payload: { appId, nodes: workflow.nodes, edges: workflow.edges, chatConfig: {}, variables: {}, messages: [{ role: 'user', content: '1+1' }] },
    });
    expect(res.statusCode).toBe(200);
    expect(res.body).not.toContain('event: error');
    expect(res.body).toContain('result: 2');
  });

  it('an unknown system plugin id is a clear error', async () => {
    const workflow = loadWorkflow('system-plugins');
    (workflow.nodes.find((n) => n.nodeId === 'tGetTime0001') as { pluginId: string }).pluginId = 'community-doesNotExist';
    const appId = await importWorkflow(t, tok, 'Broken plugin', workflow);
    const res = await completions({ appId, messages: [{ role: 'user', content: '1' }] });
    expect(res.statusCode).toBe(404);
    expect(res.json().message).toMatch(/community-doesNotExist not found/);
  });
});

