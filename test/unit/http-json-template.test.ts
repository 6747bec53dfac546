import { describe, expect, it } from 'vitest';
import { jsonTemplateRuns } from '../../src/platform/chat/workflow-nodes/http-node.js';

describe('jsonTemplateRuns', () => {
  it('cuts a body template where its strings start and end, escaped quotes staying inside', () => {
    expect(jsonTemplateRuns('{"a": {{x}}, "b": "say \\"{{y}}\\"", "c": "{{z}}"}')).toEqual([
      { text: '{"', quoted: false },
      { text: 'a', quoted: true },
      { text: '": {{x}}, "', quoted: false },
      { text: 'b', quoted: true },
      { text: '": "', quoted: false },
      { text: 'say \\"{{y}}\\"', quoted: true },
      { text: '", "', quoted: false },
      { text: 'c', quoted: true },
      { text: '": "', quoted: false },
      { text: '{{z}}', quoted: true },
      { text: '"}', quoted: false },
    ]);
  });

  it('gives back the template when joined, an unclosed string running to the end', () => {
    for (const template of ['', '{}', '[{{list}}]', '{"open": "{{x}}', '"\\\\"{{y}}']) {
      expect(jsonTemplateRuns(template).map((run) => run.text).join('')).toBe(template);
    }
    expect(jsonTemplateRuns('"\\\\"{{y}}').at(-1)).toEqual({ text: '"{{y}}', quoted: false });
  });
});
