import { describe, expect, it } from 'vitest';
import type { LLMModel } from '../../src/domain/models.js';
import { chatRequestBody, type ChatRequestParts } from '../../src/infra/llm-stream.js';

const messages = [{ role: 'user' as const, content: 'hi' }];
const model = (extra: Partial<LLMModel> = {}): LLMModel => ({ model: 'm', name: 'M', maxContext: 16000, maxResponse: 4000, quoteMaxToken: 2000, maxTemperature: 1.2, ...extra });
const configured = model({ defaultConfig: { temperature: 1, max_tokens: 99, top_p: 0.5 } });

describe('chatRequestBody: defaultConfig first, what the call sets wins, clamped once', () => {
  it.each<[string, LLMModel, Omit<ChatRequestParts, 'messages'>, Record<string, unknown>]>([
    ["the call's values over the config's, the config's others kept", configured, { temperature: 0.6, maxTokens: 300 }, { temperature: 0.6, max_tokens: 300, top_p: 0.5 }],
    ['what the call leaves out comes from the config', configured, { temperature: 0.3 }, { temperature: 0.3, max_tokens: 99, top_p: 0.5 }],
    ['nothing set and no config: no temperature, no max_tokens', model(), {}, {}],
    ['temperature within [0, maxTemperature]', model(), { temperature: 5 }, { temperature: 1.2 }],
    ['a negative temperature is 0', model(), { temperature: -1 }, { temperature: 0 }],
    ['a model without maxTemperature takes at most 1', model({ maxTemperature: undefined }), { temperature: 1.5 }, { temperature: 1 }],
    ['a temperature that is no number is left out', model(), { temperature: Number.NaN }, {}],
    ['max_tokens within maxResponse', model(), { maxTokens: 99999 }, { max_tokens: 4000 }],
    ['max_tokens a whole number of at least 1', model(), { maxTokens: 2.5 }, { max_tokens: 2 }],
    ['a max_tokens below 1 asks for maxResponse', model(), { maxTokens: 0 }, { max_tokens: 4000 }],
  ])('%s', (_name, llm, parts, expected) => {
    expect(chatRequestBody(llm, { messages, ...parts })).toEqual({ ...(llm.defaultConfig ?? {}), model: 'm', messages, ...expected });
  });

  it("puts the call's extra fields over the config, never over the model or the messages", () => {
    const llm = model({ defaultConfig: { tool_choice: 'none', model: 'other', messages: [], top_p: 0.5 } });
    const tools = [{ type: 'function', function: { name: 'f' } }];
    expect(chatRequestBody(llm, { messages, temperature: 0.5, extra: { tools, tool_choice: 'auto', model: 'not-this' } })).toEqual({
      top_p: 0.5,
      tools,
      tool_choice: 'auto',
      model: 'm',
      messages,
      temperature: 0.5,
    });
  });
});
