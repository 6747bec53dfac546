import { describe, expect, it } from 'vitest';
import { tokenizeForSearch } from '../../src/domain/full-text.js';
import { TextIndex } from '../../src/domain/text-index.js';

/**
 * The reference: Okapi BM25 (k1 1.2, b 0.75, IDF ln(1 + (N − df + 0.5) / (df + 0.5))) scored
 * document by document over every live document with exact corpus statistics; documents without
 * a query term are left out, ties keep insertion order.
 */
function reference(docs: Map<string, string[]>, query: string[], k: number) {
  const all = [...docs].map(([id, tokens]) => ({ id, tokens }));
  const df = new Map<string, number>();
  for (const doc of all) for (const token of new Set(doc.tokens)) df.set(token, (df.get(token) ?? 0) + 1);
  const avgLength = all.reduce((sum, doc) => sum + doc.tokens.length, 0) / all.length;
  const terms = new Set(query);
  const scored: { id: string; score: number }[] = [];
  for (const doc of all) {
    let score = 0;
    for (const term of terms) {
      const tf = doc.tokens.filter((token) => token === term).length;
      if (tf === 0) continue;
      const idf = Math.log(1 + (all.length - df.get(term)! + 0.5) / (df.get(term)! + 0.5));
      score += (idf * tf * 2.2) / (tf + 1.2 * (0.25 + (0.75 * doc.tokens.length) / avgLength));
    }
    if (score > 0) scored.push({ id: doc.id, score });
  }
  return scored.sort((x, y) => y.score - x.score).slice(0, k);
}

let seed = 5;
const random = () => {
  seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
  return seed / 2 ** 32;
};
const vocabulary = Array.from({ length: 300 }, (_, i) => `w${i}`);
const randomDoc = () => Array.from({ length: 3 + Math.floor(random() * 30) }, () => vocabulary[Math.floor(vocabulary.length * random() ** 2)]!);

describe('TextIndex (BM25 from posting lists)', () => {
  it.each([
    ['reset password', 'reset'],
    ['cluster memory', 'nodes'],
    ['导入网页', 'kb'],
  ])('%j ranks %s first', (query, expected) => {
    const index = new TextIndex();
    index.put('reset', tokenizeForSearch('To reset a password open the account settings and choose reset password.'));
    index.put('nodes', tokenizeForSearch('The cluster lists nodes with their CPU and memory.'));
    index.put('kb', tokenizeForSearch('知识库支持导入文件和网页链接。'));
    expect(index.search(tokenizeForSearch(query), 3)[0]?.id).toBe(expected);
  });

  it('scores as the reference does over the live documents, through replacements, removals and a rebuild', () => {
    const index = new TextIndex();
    const docs = new Map<string, string[]>();
    const put = (id: string, tokens: string[]) => {
      index.put(id, tokens);
      docs.set(id, tokens);
    };
    for (let i = 0; i < 3000; i++) put(`d${i}`, randomDoc());
    const compare = (query: string[]) => {
      const expected = reference(docs, query, 50);
      const all = new Map(reference(docs, query, docs.size).map((hit) => [hit.id, hit.score]));
      const got = index.search(query, 50);
      // Equal scores may come in another order (a replaced document moves to a new slot).
      expect(got).toHaveLength(expected.length);
      for (const [i, hit] of got.entries()) {
        expect(hit.score).toBeCloseTo(expected[i]!.score, 9);
        expect(all.get(hit.id)).toBeCloseTo(hit.score, 9);
      }
    };
    compare(['w1', 'w7', 'w250']);
    for (let i = 0; i < 3000; i += 3) {
      index.remove(`d${i}`);
      docs.delete(`d${i}`);
    }
    for (let i = 1; i < 3000; i += 9) put(`d${i}`, randomDoc());
    // More than 1,000 dead slots and a quarter of all: the postings were rebuilt on the way.
    expect(index.size).toBe(docs.size);
    compare(['w1', 'w7', 'w250']);
    compare(['w3', 'w3', 'unknown']);
  });

  it('counts repeated tokens as term frequency and leaves out documents without a query term', () => {
    const index = new TextIndex();
    index.put('once', ['x', 'y', 'z', 'w']);
    index.put('thrice', ['x', 'x', 'x', 'w']);
    index.put('none', ['q']);
    const hits = index.search(['x'], 10);
    expect(hits.map((hit) => hit.id)).toEqual(['thrice', 'once']);
    const docs = new Map([
      ['once', ['x', 'y', 'z', 'w']],
      ['thrice', ['x', 'x', 'x', 'w']],
      ['none', ['q']],
    ]);
    expect(hits[0]!.score).toBeCloseTo(reference(docs, ['x'], 1)[0]!.score, 9);
  });

  it('asks the exclusion only about scored documents, honours k and empty input', () => {
    const index = new TextIndex();
    for (let i = 0; i < 10; i++) index.put(`d${i}`, ['common', `own${i}`]);
    const asked: string[] = [];
    const hits = index.search(['own3', 'own4'], 5, (id) => {
      asked.push(id);
      return id === 'd3';
    });
    expect(hits.map((hit) => hit.id)).toEqual(['d4']);
    expect(asked.sort()).toEqual(['d3', 'd4']);
    expect(index.search(['common'], 3)).toHaveLength(3);
    expect(index.search(['common'], 0)).toEqual([]);
    expect(new TextIndex().search(['common'], 3)).toEqual([]);
    index.remove('d4');
    index.remove('missing');
    expect(index.has('d4')).toBe(false);
    expect(index.search(['own4'], 3)).toEqual([]);
  });

  it('rebuilds from its exported state with the same answers (repeats, removals, unused terms dropped)', () => {
    const index = new TextIndex();
    for (let i = 0; i < 500; i++) index.put(`d${i}`, [...randomDoc(), ...(i % 5 === 0 ? ['twice', 'twice'] : [])]);
    for (let i = 0; i < 500; i += 4) index.remove(`d${i}`);
    index.put('gone', ['only-here']);
    index.remove('gone');
    const state = index.exportState();
    expect(state.terms).not.toContain('only-here');
    const restored = TextIndex.fromState(structuredClone(state));
    expect(restored.size).toBe(index.size);
    for (const query of [['w1', 'w2', 'w40'], ['twice'], ['w299', 'nothing']]) expect(restored.search(query, 30)).toEqual(index.search(query, 30));
    restored.put('d1', ['w1', 'w1', 'new-term']);
    expect(restored.search(['new-term'], 3).map((hit) => hit.id)).toEqual(['d1']);
    expect(() => TextIndex.fromState({ ...state, documents: state.documents.subarray(0, 10) })).toThrow(RangeError);
  });
});
