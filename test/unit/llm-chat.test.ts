import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildQaPrompt, parseQaPairs } from '../../src/domain/qa-extract.js';
import { chatCompletion } from '../../src/infra/llm-chat.js';
import { ProviderError } from '../../src/infra/provider-http.js';
import type { LLMModel } from '../../src/domain/models.js';
import { type FakeModelProvider, startFakeModelProvider } from '../helpers/fake-model-provider.js';

const llm = (extra: Partial<LLMModel> = {}): LLMModel => ({
  model: 'gpt-test',
  name: 'GPT test',
  maxContext: 16000,
  maxResponse: 4000,
  quoteMaxToken: 8000,
  maxTemperature: 1.2,
  ...extra,
});
const completion = (content: string | null, usage?: object) => ({
  json: { id: 'c1', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }], ...(usage ? { usage } : {}) },
});
const errorOf = async (promise: Promise<unknown>) => promise.then(() => undefined, (error: unknown) => error as ProviderError);

describe('chatCompletion (local server speaking /chat/completions)', () => {
  let server: FakeModelProvider;
  beforeAll(async () => {
    server = await startFakeModelProvider();
  });
  afterAll(() => server.close());

  it('sends a non-streaming request and returns content and usage', async () => {
    server.handler = () => completion('Hello there', { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 });
    const result = await chatCompletion(
      llm({ defaultConfig: { top_p: 0.9 } }),
      [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
      ],
      { baseUrl: server.baseUrl, apiKey: 'sk-chat', timeoutMs: 2000 },
      { temperature: 5, maxTokens: 100 },
    );
    expect(result).toEqual({ content: 'Hello there', inputTokens: 12, outputTokens: 3 });
    const last = server.requests.at(-1)!;
    expect(last.path).toBe('/v1/chat/completions');
    expect(last.headers.authorization).toBe('Bearer sk-chat');
    expect(last.body).toEqual({
      top_p: 0.9,
      model: 'gpt-test',
      stream: false,
      temperature: 1.2,
      max_tokens: 100,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
      ],
    });
  });

  it('estimates tokens when the provider reports no usage; null content is empty', async () => {
    server.handler = () => completion(null);
    const result = await chatCompletion(llm(), [{ role: 'user', content: 'hello world' }], { baseUrl: server.baseUrl, timeoutMs: 2000 });
    expect(result).toEqual({ content: '', inputTokens: 2, outputTokens: 0 });
  });

  it('runs the QA round trip: prompt in, pairs out', async () => {
    server.handler = (request) => {
      const prompt = (request.body as { messages: { content: string }[] }).messages[0]!.content;
      const fact = prompt.match(/<Context>\n([\s\S]*)\n<\/Context>/)![1];
      return completion(`Q1: What does the text say?\nA1: ${fact}\nQ2: Is it short?\nA2: Yes.`);
    };
    const result = await chatCompletion(llm(), buildQaPrompt('The sky is blue.'), { baseUrl: server.baseUrl, timeoutMs: 2000 }, { temperature: 0.3 });
    expect(parseQaPairs(result.content)).toEqual([
      { q: 'What does the text say?', a: 'The sky is blue.' },
      { q: 'Is it short?', a: 'Yes.' },
    ]);
  });

  it.each([
    ['HTTP 400', { status: 400, json: { error: { message: 'context length exceeded', type: 'invalid_request_error' } } }, /HTTP 400: context length exceeded/, true],
    ['HTTP 502', { status: 502, text: 'bad gateway' }, /HTTP 502: bad gateway/, false],
    ['no choices', { json: { choices: [] } }, /no choices/, false],
  ])('%s → ProviderError', async (_name, answer, message, invalid) => {
    server.handler = () => answer;
    const error = await errorOf(chatCompletion(llm(), [{ role: 'user', content: 'x' }], { baseUrl: server.baseUrl, apiKey: 'sk-hidden', timeoutMs: 2000 }));
    expect(error).toBeInstanceOf(ProviderError);
    expect(error!.message).toMatch(message);
    expect(error!.message).not.toContain('sk-hidden');
    expect(error!.isInvalidRequest).toBe(invalid);
  });

  it('times out and reports a missing URL', async () => {
    server.handler = () => ({ delayMs: 1500, ...completion('late') });
    const slow = await errorOf(chatCompletion(llm(), [{ role: 'user', content: 'x' }], { baseUrl: server.baseUrl, timeoutMs: 150 }));
    expect(slow?.kind).toBe('timeout');
    const missing = await errorOf(chatCompletion(llm(), [{ role: 'user', content: 'x' }], { timeoutMs: 150 }));
    expect(missing?.kind).toBe('not_configured');
  });
});
