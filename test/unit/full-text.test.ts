import { describe, expect, it } from 'vitest';
import { bm25Scores, queryTokensForSearch, tokenizeForSearch, uniqueTokens } from '../../src/domain/full-text.js';

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

  it('cuts a long word of an astral script at a character boundary, in documents and queries alike', () => {
    // Adlam letters take two UTF-16 units each: 40 units after the "x" would end on half a letter.
    const word = `x${'𞤢'.repeat(25)}`;
    expect(tokenizeForSearch(`a ${word} b`)).toEqual(['a', `x${'𞤢'.repeat(19)}`, 'b']);
    expect(queryTokensForSearch(word)).toEqual([`x${'𞤢'.repeat(19)}`]);
    expect(tokenizeForSearch(`xy${'𞤢'.repeat(25)}`)).toEqual([`xy${'𞤢'.repeat(19)}`]);
  });

  it('uniqueTokens keeps first-seen order', () => {
    expect(uniqueTokens(['b', 'a', 'b', 'c', 'a'])).toEqual(['b', 'a', 'c']);
  });
});

describe('queryTokensForSearch', () => {
  it.each([
    ['知识库', ['知识', '识库']],
    ['库', ['库']],
    ['API 文档 api', ['api', '文档']],
    ['Reset the reset', ['reset', 'the']],
    ['', []],
  ])('%j → %j', (text, expected) => {
    expect(queryTokensForSearch(text)).toEqual(expected);
  });

  it('every query token is among the document tokens of the same text', () => {
    const text = '知识库支持 PDF 导入';
    const documentTokens = new Set(tokenizeForSearch(text));
    for (const token of queryTokensForSearch(text)) expect(documentTokens.has(token)).toBe(true);
  });
});

describe('bm25Scores', () => {
  const texts: Record<string, string> = {
    reset: 'To reset a password open the account settings and choose reset password.',
    nodes: 'The cluster lists nodes with their CPU and memory.',
    chat: 'Chat history is kept for thirty days.',
    kb: '知识库支持导入文件和网页链接。',
    long: `password ${'filler words about nothing in particular '.repeat(30)}`,
  };
  const docs = Object.entries(texts).map(([id, text]) => ({ id, tokens: tokenizeForSearch(text) }));
  const df = new Map<string, number>();
  for (const doc of docs) for (const token of new Set(doc.tokens)) df.set(token, (df.get(token) ?? 0) + 1);
  const corpus = {
    totalDocs: docs.length,
    avgDocLength: docs.reduce((sum, doc) => sum + doc.tokens.length, 0) / docs.length,
    docFrequency: (token: string) => df.get(token) ?? 0,
  };
  const search = (query: string) => bm25Scores(tokenizeForSearch(query), docs, corpus);

  it.each([
    ['reset password', 'reset'],
    ['cluster memory', 'nodes'],
    ['how long is chat history kept', 'chat'],
    ['导入网页', 'kb'],
    ['知识', 'kb'],
  ])('%j ranks %s first', (query, expected) => {
    expect(search(query)[0]?.id).toBe(expected);
  });

  it('prefers the shorter document for the same term frequency (length normalisation)', () => {
    const ids = search('password').map((hit) => hit.id);
    expect(ids.indexOf('reset')).toBeLessThan(ids.indexOf('long'));
  });

  it('leaves out documents without any query term and returns scores in descending order', () => {
    const hits = search('password memory');
    expect(hits.map((hit) => hit.id).sort()).toEqual(['long', 'nodes', 'reset']);
    for (let i = 1; i < hits.length; i++) expect(hits[i - 1]!.score).toBeGreaterThanOrEqual(hits[i]!.score);
  });

  it('returns nothing for empty queries or corpora', () => {
    expect(search('')).toEqual([]);
    expect(bm25Scores(['x'], [], corpus)).toEqual([]);
  });

  it('rarer terms weigh more (IDF) and k1/b are honoured', () => {
    const two = [
      { id: 'common', tokens: ['common', 'x'] },
      { id: 'rare', tokens: ['rare', 'x'] },
    ];
    const stats = { totalDocs: 100, avgDocLength: 2, docFrequency: (t: string) => (t === 'common' ? 90 : 1) };
    expect(bm25Scores(['common', 'rare'], two, stats)[0]!.id).toBe('rare');
    const noSaturation = bm25Scores(['x'], [{ id: 'a', tokens: ['x', 'x', 'x'] }], stats, { k1: 0, b: 0 });
    expect(noSaturation[0]!.score).toBeCloseTo(Math.log(1 + 99.5 / 1.5), 6);
  });
});
