import { describe, expect, it } from 'vitest';
import { textHead, textTail } from '../../src/domain/text-cut.js';

describe('textHead', () => {
  it.each([
    ['shorter than the cut', 'abc', 5, 'abc'],
    ['exactly the cut', 'abcde', 5, 'abcde'],
    ['plain text', 'abcdef', 3, 'abc'],
    ['a cut inside an emoji steps back over it', `${'a'.repeat(19)}😀 tail`, 20, 'a'.repeat(19)],
    ['a cut after an emoji keeps it', `${'a'.repeat(18)}😀 tail`, 20, `${'a'.repeat(18)}😀`],
    ['astral letters only, odd cut', '𞤢𞤢𞤢', 3, '𞤢'],
    ['a cut of 1 inside an emoji', '😀', 1, ''],
    ['nothing', 'abc', 0, ''],
    ['a lone high surrogate at the cut is kept (nothing to split)', 'a\ud83db', 2, 'a\ud83d'],
  ])('%s', (_name, text, max, expected) => {
    expect(textHead(text, max)).toBe(expected);
  });
});

describe('textTail', () => {
  it.each([
    ['shorter than the cut', 'abc', 5, 'abc'],
    ['plain text', 'abcdef', 3, 'def'],
    ['a cut inside an emoji steps on over it', `head 😀${'b'.repeat(19)}`, 20, 'b'.repeat(19)],
    ['a cut before an emoji keeps it', `head 😀${'b'.repeat(18)}`, 20, `😀${'b'.repeat(18)}`],
    ['nothing (not the whole text, as slice(-0) gives)', 'abc', 0, ''],
  ])('%s', (_name, text, max, expected) => {
    expect(textTail(text, max)).toBe(expected);
  });
});
