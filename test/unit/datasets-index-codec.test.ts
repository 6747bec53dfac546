import { describe, expect, it } from 'vitest';
import { DatasetEntry } from '../../src/platform/datasets/search/dataset-entry.js';
import { captureSnapshot, decodeSnapshot, encodeSnapshot } from '../../src/platform/datasets/search/index-codec.js';

describe('search index snapshot codec at scale', () => {
  // 200,000 distinct terms land in one terms part and 150,000 ids in one documents part: more
  // than a push(...spread) call can take.
  it('round-trips 150,000 items holding 200,000 distinct terms', async () => {
    const entry = new DatasetEntry('d1', 'model');
    for (let i = 0; i < 150_000; i++) {
      const tokens = i < 50_000 ? [`t${i}`, `u${i}`] : [`t${i}`];
      entry.putItem({ _id: `id${i}`, datasetId: 'd1', collectionId: 'c1', q: `q${i}`, a: '', chunkIndex: i }, tokens);
    }
    const state = captureSnapshot(entry);
    expect(state.text.terms).toHaveLength(200_000);
    const parts = await encodeSnapshot(state);
    expect(parts.filter((part) => part.kind === 'documents')).toHaveLength(1);

    const decoded = await decodeSnapshot('d1', 'model', parts);
    expect(decoded.items.size).toBe(150_000);
    expect(decoded.text.exportState()).toEqual(state.text);
    expect(decoded.fullTextSearch(['u49999'], 5, new Set()).map((hit) => hit.item._id)).toEqual(['id49999']);
    expect(decoded.fullTextSearch(['t149999'], 5, new Set()).map((hit) => hit.item._id)).toEqual(['id149999']);
  });
});
