import { describe, expect, it } from 'vitest';
import { joinUrl } from '../../src/infra/join-url.js';
import { endpointUrl } from '../../src/infra/provider-http.js';

describe('joinUrl', () => {
  it.each([
    ['http://llm.local/v1', 'http://llm.local/v1/chat/completions'],
    ['http://llm.local/v1/', 'http://llm.local/v1/chat/completions'],
    ['http://llm.local/v1///', 'http://llm.local/v1/chat/completions'],
  ])('%s + /chat/completions', (base, expected) => {
    expect(joinUrl(base, '/chat/completions')).toBe(expected);
  });

  it('endpointUrl still keeps a base that already names the path', () => {
    expect(endpointUrl('http://llm.local/v1/embeddings/', '/embeddings')).toBe('http://llm.local/v1/embeddings');
    expect(endpointUrl('http://llm.local/v1/', '/embeddings')).toBe('http://llm.local/v1/embeddings');
  });
});
