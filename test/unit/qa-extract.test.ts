import { describe, expect, it } from 'vitest';
import { buildQaPrompt, DEFAULT_QA_DESCRIPTION, parseQaPairs } from '../../src/domain/qa-extract.js';

describe('buildQaPrompt', () => {
  it('is one user message with the default description, the format block and the text in <Context>', () => {
    const messages = buildQaPrompt('Paris is the capital of France.');
    expect(messages).toHaveLength(1);
    expect(messages[0]!.role).toBe('user');
    expect(messages[0]!.content.startsWith(DEFAULT_QA_DESCRIPTION)).toBe(true);
    expect(messages[0]!.content).toContain('Q1: question\nA1: answer');
    expect(messages[0]!.content.endsWith('<Context>\nParis is the capital of France.\n</Context>')).toBe(true);
  });

  it('a custom prompt replaces only the description', () => {
    const content = buildQaPrompt('text', 'Ask about dates only.')[0]!.content;
    expect(content.startsWith('Ask about dates only.\n\n')).toBe(true);
    expect(content).not.toContain(DEFAULT_QA_DESCRIPTION);
    expect(content).toContain('Q1: question');
    expect(buildQaPrompt('text', '   ')[0]!.content.startsWith(DEFAULT_QA_DESCRIPTION)).toBe(true);
  });
});

describe('parseQaPairs', () => {
  it.each([
    ['plain pairs', 'Q1: What is X?\nA1: X is a letter.\nQ2: Why?\nA2: Because.', [{ q: 'What is X?', a: 'X is a letter.' }, { q: 'Why?', a: 'Because.' }]],
    ['escaped newlines', 'Q1: a?\\nA1: b.\\nQ2: c?\\nA2: d.', [{ q: 'a?', a: 'b.' }, { q: 'c?', a: 'd.' }]],
    ['multi-line answers, indentation collapsed', 'Q1: List?\nA1: - one\n    - two\n\n   - three\nQ2: Done?\nA2: yes', [{ q: 'List?', a: '- one\n- two\n- three' }, { q: 'Done?', a: 'yes' }]],
    ['full-width colons', 'Q1：什么是知识库？\nA1：存放资料的地方。', [{ q: '什么是知识库？', a: '存放资料的地方。' }]],
    ['preamble and CRLF', 'Sure! Here they are:\r\nQ1: One?\r\nA1: 1\r\n', [{ q: 'One?', a: '1' }]],
    ['numbers must match', 'Q1: first?\nA2: wrong number', []],
    ['no pairs', 'I cannot help with that.', []],
    ['empty answer skipped', 'Q1: empty?\nA1:\nQ2: full?\nA2: yes', [{ q: 'full?', a: 'yes' }]],
    ['Q inside answer text is not a marker without a digit', 'Q1: Quality?\nA1: Quite good. Q: not a marker.', [{ q: 'Quality?', a: 'Quite good. Q: not a marker.' }]],
  ])('%s', (_name, answer, expected) => {
    expect(parseQaPairs(answer)).toEqual(expected);
  });
});
