import { describe, expect, it } from 'vitest';
import { buildQaPrompt, DEFAULT_QA_DESCRIPTION, MAX_QA_ANSWER_CHARS, parseQaPairs } from '../../src/domain/qa-extract.js';

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
    ['a question without its answer starts no pair', 'Q1: lost?\nQ2: kept?\nA2: yes', [{ q: 'kept?', a: 'yes' }]],
    ['a later question before the answer is part of the question', 'Q1: one Q2: two\nA1: both', [{ q: 'one Q2: two', a: 'both' }]],
    ['other answer markers stay in the answer', 'Q1: a?\nA1: b A2: c\nQ3: d?\nA3: e', [{ q: 'a?', a: 'b A2: c' }, { q: 'd?', a: 'e' }]],
    ['spaces before the colon, multi-digit numbers', 'Q12 : twelve?\nA1: no\nA12 ：yes', [{ q: 'twelve?\nA1: no', a: 'yes' }]],
    ['repeated numbers', 'Q1: a?\nA1: b\nQ1: c?\nA1: d', [{ q: 'a?', a: 'b' }, { q: 'c?', a: 'd' }]],
    ['astral text', 'Q1: 😀?\nA1: 𞤢𞤣', [{ q: '😀?', a: '𞤢𞤣' }]],
  ])('%s', (_name, answer, expected) => {
    expect(parseQaPairs(answer)).toEqual(expected);
  });

  // The regular expression parseQaPairs used before its linear scan (cubic on some answers):
  // the reference for small inputs.
  const PAIR = /Q(\d+)\s*[:：]\s*([\s\S]*?)\s*A\1\s*[:：]\s*([\s\S]*?)(?=\s*Q\d+\s*[:：]|$)/g;
  const byRegex = (answer: string) =>
    [...answer.replace(/\\n/g, '\n').replace(/\r\n?/g, '\n').matchAll(PAIR)]
      .map((match) => ({ q: match[2]!.trim(), a: match[3]!.replace(/\n\s*/g, '\n').trim() }))
      .filter((pair) => pair.q && pair.a);

  it('reads the same pairs as the former regular expression on random short answers', () => {
    const pieces = ['Q1:', 'A1:', 'Q2：', 'A2 :', 'Q12:', 'A12:', 'Q', 'A', '1', ':', ' ', '\n', '\r\n', '\\n', 'x', 'yz', '😀', '\t'];
    let seed = 42;
    const random = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return (seed >>> 8) % n;
    };
    for (let round = 0; round < 20_000; round++) {
      let answer = '';
      for (let length = random(24); length > 0; length--) answer += pieces[random(pieces.length)];
      expect(parseQaPairs(answer), JSON.stringify(answer)).toEqual(byRegex(answer));
    }
  });

  // Inputs on which the former regular expression backtracks for minutes to days (quadratic or
  // cubic in their length); a linear parse reads each in milliseconds.
  it.each([
    ['a question marker then whitespace', `Q1:${' '.repeat(200_000)}`],
    ['a question then newlines', `Q2: text${'\n'.repeat(400_000)}`],
    ['many questions without answers', 'Q1: x '.repeat(100_000)],
    ['a marker without its colon before a long run (the marker scan)', `Q1${' '.repeat(200_000)}A1`],
  ])('stays linear: %s', (_name, answer) => {
    expect(parseQaPairs(answer)).toEqual([]);
  });

  it('reads at most MAX_QA_ANSWER_CHARS of an answer', () => {
    const pair = 'Q1: q?\nA1: a\n';
    const answer = pair.repeat(Math.ceil((MAX_QA_ANSWER_CHARS * 1.5) / pair.length));
    expect(parseQaPairs(answer)).toHaveLength(Math.floor(MAX_QA_ANSWER_CHARS / pair.length));
  });
});
