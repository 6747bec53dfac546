import { describe, expect, it } from 'vitest';
import { chunkText, LINK_OVERLAP_RATIO } from '../../src/platform/datasets/collections/collection-import.service.js';

const sentences = Array.from({ length: 200 }, (_, i) => `Ship ${i} sails.`).join(' ');
/** A chunk starts with a sentence the one before it ends with. */
const overlaps = (chunks: { q: string }[]) => chunks.slice(1).some((chunk, i) => chunks[i]!.q.endsWith(chunk.q.slice(0, chunk.q.indexOf('.') + 1)));

describe('chunkText', () => {
  it('overlaps chunks in chunk mode, not for Q&A extraction, and for web links in every mode', () => {
    expect(overlaps(chunkText(sentences, { chunkSize: 60, trainingType: 'chunk' }))).toBe(true);
    expect(overlaps(chunkText(sentences, { chunkSize: 60, trainingType: 'qa' }))).toBe(false);
    expect(overlaps(chunkText(sentences, { chunkSize: 60, trainingType: 'qa' }, LINK_OVERLAP_RATIO))).toBe(true);
  });
});
