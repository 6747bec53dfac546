import { describe, expect, it } from 'vitest';
import type { DatasetsContext } from '../../src/platform/datasets/context.js';
import type { DatasetRecord } from '../../src/platform/datasets/datasets/dataset.repo.js';
import { predictVectors, prepareTrainingItems } from '../../src/platform/datasets/training/enqueue.js';

/**
 * An import of a 100 MB text queues ~200,000 chunks: sizing and normalising them lets the event
 * loop turn on the way. Judged by order: an immediate set before the call runs before it resolves.
 */
const items = Array.from({ length: 20_000 }, (_, i) => ({ q: `Chunk ${i} `.padEnd(200, 'x'), chunkIndex: i }));
const ctx = { embedders: () => ({ vectorModel: () => ({ model: 'vector', maxToken: 3000, weight: 0 }) }) } as unknown as DatasetsContext;
const dataset = { _id: 'd'.repeat(24), vectorModel: 'vector' } as unknown as DatasetRecord;

/** Whether an immediate scheduled before `work` ran before `work` resolved. */
async function turnedDuring(work: () => Promise<unknown>): Promise<boolean> {
  let turned = false;
  setImmediate(() => {
    turned = true;
  });
  await work();
  return turned;
}

describe('queueing many items lets the event loop turn', () => {
  it('sizing them', async () => {
    expect(await turnedDuring(async () => expect(await predictVectors(items, 'chunk')).toBe(items.length))).toBe(true);
  });

  it('normalising them for the queue', async () => {
    const input = { teamId: 't'.repeat(24), tmbId: 'm'.repeat(24), dataset, collectionId: 'c'.repeat(24), mode: 'chunk' as const, items };
    expect(await turnedDuring(async () => expect((await prepareTrainingItems(ctx, input)).docs).toHaveLength(items.length))).toBe(true);
  });

  it('a few items (a pushData) in one go', async () => {
    expect(await turnedDuring(() => predictVectors(items.slice(0, 200), 'chunk'))).toBe(false);
  });
});
