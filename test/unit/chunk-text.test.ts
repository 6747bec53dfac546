import { describe, expect, it } from 'vitest';
import { splitText } from '../../src/domain/text-splitter.js';
import { LINK_OVERLAP_RATIO } from '../../src/platform/datasets/collections/collection-import.service.js';
import { splitOptionsOf } from '../../src/platform/datasets/collections/source-text.js';
import type { TrainingMode } from '../../src/platform/datasets/collections/collection.repo.js';

const sentences = Array.from({ length: 200 }, (_, i) => `Ship ${i} sails.`).join(' ');
/** A chunk starts with a sentence the one before it ends with. */
const overlaps = (chunks: string[]) => chunks.slice(1).some((chunk, i) => chunks[i]!.endsWith(chunk.slice(0, chunk.indexOf('.') + 1)));
/** The chunks an import cuts (its split options). */
const chunkText = (text: string, settings: { chunkSize: number; trainingType: TrainingMode }, overlapRatio?: number) => splitText({ text, ...splitOptionsOf(settings, overlapRatio) }).chunks;

describe('split options of an import', () => {
  it('overlaps chunks in chunk mode, not for Q&A extraction, and for web links in every mode', () => {
    expect(overlaps(chunkText(sentences, { chunkSize: 60, trainingType: 'chunk' }))).toBe(true);
    expect(overlaps(chunkText(sentences, { chunkSize: 60, trainingType: 'qa' }))).toBe(false);
    expect(overlaps(chunkText(sentences, { chunkSize: 60, trainingType: 'qa' }, LINK_OVERLAP_RATIO))).toBe(true);
  });
});
