import { describe, expect, it } from 'vitest';
import { dotProduct, hashFeature, lexicalEmbed } from '../../src/domain/lexical-embedding.js';

const norm = (v: number[]) => Math.sqrt(v.reduce((sum, x) => sum + x * x, 0));
const cosine = (a: string, b: string) => dotProduct(lexicalEmbed(a), lexicalEmbed(b));

describe('lexicalEmbed', () => {
  it.each([
    ['English', 'The training queue embeds chunks in batches.'],
    ['Chinese', '知识库会把文本切分成块并生成向量。'],
    ['mixed', 'FastGPT 知识库 supports 混合检索'],
    ['single word', 'hello'],
    ['single CJK char', '库'],
  ])('%s text: unit norm, 256 dimensions by default, deterministic', (_name, text) => {
    const vector = lexicalEmbed(text);
    expect(vector).toHaveLength(256);
    expect(norm(vector)).toBeCloseTo(1, 6);
    expect(lexicalEmbed(text)).toEqual(vector);
  });

  it.each([[''], ['   ']])('blank text (%j) gives the zero vector', (text) => {
    const vector = lexicalEmbed(text, 64);
    expect(vector).toHaveLength(64);
    expect(vector.every((x) => x === 0)).toBe(true);
  });

  it.each([['!!! ... ???'], ['?'], ['😀'], ['→ ← ↑']])('text of no letter or digit (%j) is one feature, the whole text: a unit vector, not zeros', (text) => {
    const vector = lexicalEmbed(text, 64);
    expect(norm(vector)).toBeCloseTo(1, 6);
    expect(lexicalEmbed(` ${text} `, 64)).toEqual(vector);
  });

  it('tells such texts apart by their whole text', () => {
    expect(cosine('?', '?')).toBeCloseTo(1, 6);
    expect(cosine('?', '!')).toBeLessThan(0.5);
  });

  it('honours the dimension count and rejects bad ones', () => {
    expect(lexicalEmbed('abc', 1536)).toHaveLength(1536);
    expect(() => lexicalEmbed('abc', 0)).toThrow(RangeError);
    expect(() => lexicalEmbed('abc', 2.5)).toThrow(RangeError);
  });

  it('ignores case and Unicode width forms', () => {
    expect(lexicalEmbed('Vector SEARCH')).toEqual(lexicalEmbed('vector search'));
    expect(lexicalEmbed('ＡＢＣ test')).toEqual(lexicalEmbed('abc test'));
  });

  it.each([
    ['How do I reset my password?', 'Resetting the password: open settings and choose reset password.', 'The cluster node list shows CPU and memory.'],
    ['embedding model configuration', 'Configure the embedding model in the model configuration file.', 'Chat history is kept for thirty days.'],
    ['知识库如何导入文件', '可以在知识库中导入文件，支持 PDF 和 Word。', '今天天气很好，我们去公园散步。'],
    ['password resets', 'how to reset a password', 'bananas are yellow'],
  ])('%j is closer to the related text than to the unrelated one', (query, related, unrelated) => {
    expect(cosine(query, related)).toBeGreaterThan(cosine(query, unrelated) + 0.05);
  });

  it('identical texts score 1, word order matters a little through word pairs', () => {
    expect(cosine('alpha beta gamma', 'alpha beta gamma')).toBeCloseTo(1, 6);
    const reordered = cosine('alpha beta gamma', 'gamma beta alpha');
    expect(reordered).toBeLessThan(1);
    expect(reordered).toBeGreaterThan(0.5);
  });

  it('hashFeature is a stable 32-bit unsigned hash', () => {
    expect(hashFeature('w:hello')).toBe(hashFeature('w:hello'));
    expect(hashFeature('w:hello')).not.toBe(hashFeature('w:hellp'));
    expect(hashFeature('')).toBeGreaterThanOrEqual(0);
    expect(hashFeature('x')).toBeLessThan(2 ** 32);
  });
});
