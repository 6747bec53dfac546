import { describe, expect, it } from 'vitest';
import { tokenizeForSearch } from '../../src/domain/full-text.js';

describe('tokenizeForSearch', () => {
  it.each([
    ['', []],
    ['Hello, World!', ['hello', 'world']],
    ['e-mail v2.0', ['e', 'mail', 'v2', '0']],
    ['Ｆｕｌｌ width', ['full', 'width']],
    ['知识库', ['知', '知识', '识', '识库', '库']],
    ['API 文档', ['api', '文', '文档', '档']],
    ['カタカナ', ['カ', 'カタ', 'タ', 'タカ', 'カ', 'カナ', 'ナ']],
    ['café naïve', ['café', 'naïve']],
    ['спасибо друг', ['спасибо', 'друг']],
    ['repeat repeat', ['repeat', 'repeat']],
  ])('%j → %j', (text, expected) => {
    expect(tokenizeForSearch(text)).toEqual(expected);
  });

  it('cuts very long runs', () => {
    expect(tokenizeForSearch('x'.repeat(100))[0]).toHaveLength(40);
  });

  it('cuts a long word of an astral script at a character boundary', () => {
    // Adlam letters take two UTF-16 units each: 40 units after the "x" would end on half a letter.
    const word = `x${'𞤢'.repeat(25)}`;
    expect(tokenizeForSearch(`a ${word} b`)).toEqual(['a', `x${'𞤢'.repeat(19)}`, 'b']);
    expect(tokenizeForSearch(`xy${'𞤢'.repeat(25)}`)).toEqual([`xy${'𞤢'.repeat(19)}`]);
  });
});
