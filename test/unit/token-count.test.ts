import { describe, expect, it } from 'vitest';
import { countTokens } from '../../src/domain/token-count.js';
import { estimatePromptTokens } from '../../src/infra/llm-stream.js';

describe('countTokens (approximation of cl100k)', () => {
  it.each([
    ['', 0],
    ['   \n\t', 0],
    ['hello', 1],
    ['hello world', 2],
    ['The quick brown fox jumps over the lazy dog.', 10],
    ['internationalization', 4],
    ['你好，世界！', 6],
    ['こんにちは', 5],
    ['한국어', 3],
    ['abc中文def', 4],
    ['a+b=c', 5],
  ])('%j → %i', (text, expected) => {
    expect(countTokens(text)).toBe(expected);
  });

  it('is deterministic and additive over whitespace-separated parts', () => {
    const a = 'Knowledge bases store chunks.';
    const b = '知识库存储分块。';
    expect(countTokens(`${a} ${b}`)).toBe(countTokens(a) + countTokens(b));
    expect(countTokens(a)).toBe(countTokens(a));
  });

  it('grows roughly with text length (about 4-5 characters per token for English prose)', () => {
    const text = 'Retrieval augmented generation combines search with language models. '.repeat(50);
    const ratio = text.length / countTokens(text);
    expect(ratio).toBeGreaterThan(3);
    expect(ratio).toBeLessThan(7);
  });
});

describe('one estimate for the whole service', () => {
  it("counts a prompt's texts and tool calls, not the JSON around them, whichever node sent it", () => {
    const messages = [
      { role: 'system' as const, content: 'Be brief.' },
      { role: 'user' as const, content: 'weather in Paris?' },
      { role: 'assistant' as const, content: null, tool_calls: [{ id: 'c1', type: 'function' as const, function: { name: 'weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool' as const, tool_call_id: 'c1', content: 'sunny' },
    ];
    const texts = ['Be brief.', 'weather in Paris?', 'weather', '{"city":"Paris"}', 'sunny'];
    expect(estimatePromptTokens(messages)).toBe(texts.reduce((sum, text) => sum + countTokens(text), 0));
    expect(estimatePromptTokens([{ role: 'user', content: 'hello there' }])).toBe(countTokens('hello there'));
  });
});
