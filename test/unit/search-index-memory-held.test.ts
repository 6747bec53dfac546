import { describe, expect, it } from 'vitest';
import { TextIndex } from '../../src/domain/text-index.js';
import { VectorIndex } from '../../src/domain/vector-index.js';
import type { CollectionRepo } from '../../src/platform/datasets/collections/collection.repo.js';
import type { DataRepo } from '../../src/platform/datasets/data/data.repo.js';
import { DatasetEntry, ENTRY_BYTES, type IndexedItem } from '../../src/platform/datasets/search/dataset-entry.js';
import { createDatasetIndex } from '../../src/platform/datasets/search/dataset-index.js';
import type { VectorRepo } from '../../src/platform/datasets/search/vector.repo.js';
import { memoryStamps, memoryStore } from '../helpers/search-index-memory.js';
import { seededRandom } from '../helpers/seeded-random.js';

/**
 * What the in-process search indexes hold follows what is live, not what ever was: the full-text
 * index drops terms no document uses, the vector storage halves once mostly empty, the estimate
 * counts what is held, and per-dataset bookkeeping goes with evicted or deleted datasets.
 */

const words = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}w${i}`);

describe('TextIndex terms held', () => {
  it('replacing one document with new words 100 times keeps the held terms near the live ones', () => {
    const index = new TextIndex();
    for (let version = 0; version < 100; version++) index.put('doc', words(`v${version}`, 1000));
    expect(index.size).toBe(1);
    // Live: 1,000 terms; dead ones are dropped once they outnumber max(1,000, live).
    expect(index.heldTerms).toBeLessThanOrEqual(3000);
    expect(index.heldTerms - index.deadTerms).toBe(1000);
    expect(index.search(['v99w5'], 5).map((hit) => hit.id)).toEqual(['doc']);
    expect(index.search(['v0w5'], 5)).toEqual([]);
  });

  it('put and remove cycles leave no terms behind past the threshold', () => {
    const index = new TextIndex();
    for (let cycle = 0; cycle < 5000; cycle++) {
      index.put(`d${cycle}`, words(`c${cycle}`, 100));
      index.remove(`d${cycle}`);
    }
    expect(index.size).toBe(0);
    expect(index.heldTerms).toBeLessThanOrEqual(1100);
    expect(index.deadTerms).toBe(index.heldTerms);
  });

  it('searches answer the same (ids, scores, tie order) across compactions as an index rebuilt from its live state', () => {
    const next = seededRandom(7);
    const vocabulary = words('base', 300);
    const index = new TextIndex();
    const pick = () => vocabulary[Math.floor(next() * vocabulary.length)]!;
    const queries = Array.from({ length: 40 }, (_, q) => [pick(), pick(), q % 3 === 0 ? pick() : `fresh${q}`]);
    let compactions = 0;
    let previousHeld = 0;
    for (let step = 0; step < 3000; step++) {
      const id = `d${Math.floor(next() * 200)}`;
      if (next() < 0.25) index.remove(id);
      else {
        // Shared words (ties and repeats included) plus words of this version alone (soon dead).
        const tokens = [pick(), pick(), pick(), pick(), ...words(`s${step}`, 1 + Math.floor(next() * 4))];
        if (next() < 0.3) tokens.push(tokens[0]!);
        if (step % 50 === 0) tokens.push(`fresh${step % 40}`);
        index.put(id, tokens);
      }
      if (index.heldTerms < previousHeld) compactions += 1;
      previousHeld = index.heldTerms;
      if (step % 250 === 249) {
        const fresh = TextIndex.fromState(index.exportState());
        for (const query of queries) expect(index.search(query, 10)).toEqual(fresh.search(query, 10));
        expect(index.search(vocabulary.slice(0, 200), 20, undefined, 8)).toEqual(fresh.search(vocabulary.slice(0, 200), 20, undefined, 8));
      }
    }
    expect(compactions).toBeGreaterThan(0);
  });
});

describe('VectorIndex capacity', () => {
  const vectorOf = (next: () => number, dimensions: number) => Array.from({ length: dimensions }, () => next() - 0.5);

  it('halves its storage once under a quarter full, with search results unchanged', () => {
    const next = seededRandom(11);
    const index = new VectorIndex(16);
    const kept = new Map<string, number[]>();
    for (let i = 0; i < 10_000; i++) {
      const vector = vectorOf(next, 16);
      index.upsert(`v${i}`, vector);
      if (i % 100 === 0) kept.set(`v${i}`, vector);
    }
    expect(index.capacitySlots).toBe(16_384);
    for (let i = 0; i < 10_000; i++) if (i % 100 !== 0) index.remove(`v${i}`);
    expect(index.size).toBe(100);
    expect(index.capacitySlots).toBeLessThanOrEqual(512);
    // The same answers as an index holding just these vectors, put in the same order.
    const fresh = new VectorIndex(16);
    for (const [id, vector] of kept) fresh.upsert(id, vector);
    for (let q = 0; q < 20; q++) {
      const query = vectorOf(next, 16);
      expect(index.search(query, 10)).toEqual(fresh.search(query, 10));
    }
    expect([...index.entries()].map(([id]) => id)).toEqual([...kept.keys()]);
  });

  it('does not resize back and forth at the boundary (puts stay amortised O(1))', () => {
    const index = new VectorIndex(4);
    for (let i = 0; i < 256; i++) index.upsert(`v${i}`, [1, i, 0, 0]);
    expect(index.capacitySlots).toBe(256);
    for (let i = 63; i < 256; i++) index.remove(`v${i}`);
    expect(index.capacitySlots).toBe(128); // 63 live < 256 / 4
    index.upsert('again', [0, 0, 1, 0]);
    index.remove('again');
    index.upsert('again', [0, 0, 1, 0]);
    expect(index.capacitySlots).toBe(128);
    expect(index.search([0, 0, 1, 0], 1)[0]!.id).toBe('again');
  });
});

describe('DatasetEntry estimate', () => {
  const item = (id: string, q: string): IndexedItem => ({ _id: id, datasetId: 'd1', collectionId: 'c1', q, a: '', chunkIndex: 0 });

  it('counts every open entry, even an empty one', () => {
    expect(new DatasetEntry('d1', 'm').estimatedBytes()).toBe(ENTRY_BYTES);
    expect(ENTRY_BYTES).toBeGreaterThanOrEqual(4000);
  });

  it('counts vector storage at its capacity, and full-text terms no item uses', () => {
    const entry = new DatasetEntry('d1', 'm');
    entry.apply({ kind: 'putVectors', model: 'm', vectors: Array.from({ length: 1000 }, (_, i) => ({ id: `v${i}`, dataId: 'x', vector: new Array(256).fill(i + 1) })) });
    const full = entry.estimatedBytes();
    entry.apply({ kind: 'removeVectors', ids: Array.from({ length: 700 }, (_, i) => `v${i}`) });
    // 300 live of 1,024 slots: the rows are still held, so the estimate keeps them.
    expect(entry.vectors!.capacitySlots).toBe(1024);
    expect(entry.estimatedBytes()).toBeGreaterThanOrEqual(1024 * 256 * 4);
    entry.apply({ kind: 'removeVectors', ids: Array.from({ length: 300 }, (_, i) => `v${700 + i}`) });
    expect(entry.estimatedBytes()).toBeLessThan(full / 8);

    const text = new DatasetEntry('d2', 'm');
    text.apply({ kind: 'putItems', items: [item('a', words('one', 500).join(' '))] });
    const before = text.estimatedBytes();
    text.apply({ kind: 'putItems', items: [item('a', words('two', 500).join(' '))] });
    // Same item size, but 500 dead terms held until they outnumber the live threshold.
    expect(text.text.deadTerms).toBe(500);
    expect(text.estimatedBytes()).toBeGreaterThanOrEqual(before + 500 * 300);
  });
});

describe('dataset index bookkeeping', () => {
  const item = (datasetId: string, id: string): IndexedItem => ({ _id: id, datasetId, collectionId: `${datasetId}-c`, q: `${id} `.padEnd(100, '.'), a: '', chunkIndex: 0 });

  function indexOver(existing: Set<string>, maxBytes: number) {
    const memory = memoryStore();
    const stamps = memoryStamps();
    const data = {
      async *streamDataset(datasetId: string) {
        yield* Array.from({ length: 10 }, (_, n) => ({ ...item(datasetId, `${datasetId}-i${n}`), fullTextTokens: undefined }));
      },
    } as unknown as DataRepo;
    const vectors = { async *streamDataset() {} } as unknown as VectorRepo;
    const collections = { byDatasets: async () => [] } as unknown as CollectionRepo;
    const datasets = { existingIds: async (ids: string[]) => new Set(ids.filter((id) => existing.has(id))) };
    return createDatasetIndex(
      { data, vectors, collections, datasets, store: memory.store, stamps, bumps: stamps, log: { info: () => undefined, warn: () => undefined } },
      { minRows: 1_000_000, maxChanges: 1_000_000, maxBytes },
    );
  }

  it('forgets the log head of an evicted dataset', async () => {
    const index = indexOver(new Set(['d1', 'd2', 'd3']), 40_000); // room for one dataset
    for (const id of ['d1', 'd2', 'd3']) await index.fullTextSearch([id], 'm', [`${id}-i1`], 5, new Set());
    expect(['d1', 'd2', 'd3'].filter((id) => index.isLoaded(id))).toEqual(['d3']);
    expect(index.rememberedHeads()).toBe(1);
  });

  it('forgets the log head of a deleted dataset written here but never opened', async () => {
    const existing = new Set(['d1', 'd2']);
    const index = indexOver(existing, 10_000_000);
    await index.putItems([item('d1', 'x'), item('d2', 'y')]);
    expect(index.rememberedHeads()).toBe(2);
    existing.delete('d2');
    expect(await index.evictDeleted()).toBe(1);
    expect(index.rememberedHeads()).toBe(1);
  });
});
