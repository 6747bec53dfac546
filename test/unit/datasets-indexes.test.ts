import { describe, expect, it } from 'vitest';
import { buildIndexes, defaultIndexText, planIndexUpdate, simpleText } from '../../src/platform/datasets/data/data-indexes.js';
import { signFileToken, verifyFileToken } from '../../src/platform/datasets/files/file-token.js';
import { predictVectors, QA_VECTORS_PER_ITEM } from '../../src/platform/datasets/training/enqueue.js';

describe('simpleText', () => {
  it.each([
    ['  hello  ', 'hello'],
    ['a\r\nb\rc', 'a\nb\nc'],
    ['a\n\n\n\nb', 'a\n\nb'],
    ['a\u0001b', 'a b'],
    ['', ''],
  ])('%j → %j', (input, expected) => {
    expect(simpleText(input)).toBe(expected);
  });
});

describe('buildIndexes', () => {
  it.each([
    { name: 'chunk only', q: 'text', a: '', custom: [], expected: [{ text: 'text', defaultIndex: true }] },
    {
      name: 'Q/A pair gets q as an extra index',
      q: 'What?',
      a: 'This.',
      custom: [],
      expected: [
        { text: 'What?\nThis.', defaultIndex: true },
        { text: 'What?', defaultIndex: false },
      ],
    },
    {
      name: 'custom indexes keep the default first',
      q: 'q',
      a: '',
      custom: [{ text: 'alias one' }, { text: ' ' }],
      expected: [
        { text: 'q', defaultIndex: true },
        { text: 'alias one', defaultIndex: false },
      ],
    },
    {
      name: 'a custom index equal to the default is the default',
      q: 'q',
      a: 'a',
      custom: [{ text: 'q\na' }],
      expected: [
        { text: 'q\na', defaultIndex: true },
        { text: 'q', defaultIndex: false },
      ],
    },
    {
      name: 'more than five custom indexes are kept (at most MAX_INDEXES)',
      q: 'q',
      a: '',
      custom: Array.from({ length: 60 }, (_, i) => ({ text: `t${i}` })),
      expected: [{ text: 'q', defaultIndex: true }, ...Array.from({ length: 51 }, (_, i) => ({ text: `t${i}`, defaultIndex: false }))],
    },
  ])('$name', ({ q, a, custom, expected }) => {
    expect(buildIndexes(q, a, custom)).toEqual(expected);
  });

  it('default text joins q and a', () => {
    expect(defaultIndexText('q', '')).toBe('q');
    expect(defaultIndexText('q', 'a')).toBe('q\na');
  });
});

describe('planIndexUpdate', () => {
  const stored = [
    { dataId: 'v1', text: 'old q', defaultIndex: true },
    { dataId: 'v2', text: 'alias', defaultIndex: false },
    { dataId: 'v3', text: 'gone', defaultIndex: false },
  ];

  it.each([
    {
      name: 'unchanged q keeps the default, changed alias is re-embedded, missing one removed',
      submitted: [{ dataId: 'v2', text: 'alias 2' }],
      q: 'old q',
      keep: ['v1'],
      embed: ['alias 2'],
      remove: ['v2', 'v3'],
    },
    { name: 'new q re-embeds the default', submitted: [{ dataId: 'v2', text: 'alias' }, { dataId: 'v3', text: 'gone' }], q: 'new q', keep: ['v2', 'v3'], embed: ['new q'], remove: ['v1'] },
    { name: 'new index without dataId is embedded', submitted: [{ dataId: 'v2', text: 'alias' }, { dataId: 'v3', text: 'gone' }, { text: 'fresh' }], q: 'old q', keep: ['v1', 'v2', 'v3'], embed: ['fresh'], remove: [] },
  ])('$name', ({ submitted, q, keep, embed, remove }) => {
    const plan = planIndexUpdate(stored, submitted, q, '');
    expect(plan.keep.map((index) => index.dataId)).toEqual(keep);
    expect(plan.embed.map((index) => index.text)).toEqual(embed);
    expect(plan.removeVectorIds.sort()).toEqual(remove);
  });
});

describe('file read tokens', () => {
  const key = 'file-token-key-0123456789';
  const payload = { bucketName: 'dataset' as const, teamId: 't', tmbId: 'm', fileId: 'f' };

  it('round-trips and expires after 30 minutes for dataset files', () => {
    const token = signFileToken(key, payload, 1000_000);
    expect(verifyFileToken(key, token, 1000_000 + 60_000)).toEqual(payload);
    expect(() => verifyFileToken(key, token, 1000_000 + 31 * 60_000)).toThrow(/expired/);
  });

  it('refuses another key and a tampered body', () => {
    const token = signFileToken(key, payload, 1000_000);
    expect(() => verifyFileToken('another-key-0123456789', token, 1000_000)).toThrow(/not valid/);
    const [head, , signature] = token.split('.');
    const forged = Buffer.from(JSON.stringify({ ...payload, teamId: 'x', exp: 99999 })).toString('base64url');
    expect(() => verifyFileToken(key, `${head}.${forged}.${signature}`, 1000_000)).toThrow(/not valid/);
  });
});

describe('predictVectors (dataset size of a push)', () => {
  const custom = (n: number) => Array.from({ length: n }, (_, i) => ({ text: `index ${i}` }));
  it.each([
    { name: 'a chunk: its default index', items: [{ q: 'text' }], mode: 'chunk' as const, expected: 1 },
    { name: 'a Q/A pair: q+a and q alone', items: [{ q: 'What?', a: 'This.' }], mode: 'chunk' as const, expected: 2 },
    { name: 'custom indexes: each one, plus the default', items: [{ q: 'text', a: 'answer', indexes: custom(50) }], mode: 'chunk' as const, expected: 51 },
    { name: 'auto is trained as chunk', items: [{ q: 'What?', a: 'This.' }, { q: 'other' }], mode: 'auto' as const, expected: 3 },
    { name: 'items the queue refuses store nothing', items: [{ q: '  ' }, { q: 'text', indexes: custom(51) }], mode: 'chunk' as const, expected: 0 },
    { name: 'QA: the guess per item, whatever it holds', items: [{ q: 'text', indexes: custom(50) }, { q: 'more' }], mode: 'qa' as const, expected: 2 * QA_VECTORS_PER_ITEM },
  ])('$name', async ({ items, mode, expected }) => {
    expect(await predictVectors(items, mode)).toBe(expected);
  });
});
