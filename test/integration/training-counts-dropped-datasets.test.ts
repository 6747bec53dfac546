/**
 * The training counts' per-dataset tally of deltas written since the last fold is kept in memory
 * per process; a dropped dataset's tally goes with it, so a dataset deleted under the fold
 * threshold leaves nothing behind (and a reused id starts again from zero).
 */
import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTrainingCounts } from '../../src/platform/datasets/training/training-counts.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';

let a: TestApp;

beforeAll(async () => {
  a = await buildTestApp({ TRAINING_WORKER: 'false', LOG_LEVEL: 'silent' });
});
afterAll(async () => {
  await a?.close();
});

describe('training counts of dropped datasets', () => {
  it('forget the deltas written since the last fold, so writes after the drop start a new tally', async () => {
    const team = new ObjectId().toHexString();
    const datasetId = new ObjectId().toHexString();
    let recounts = 0;
    const counts = createTrainingCounts(a.app.mongo.db, {
      recount: async () => {
        recounts += 1;
        return [];
      },
    });
    const change = { teamId: team, datasetId, collectionId: 'c1', model: 'embed.v1', delta: 1 };
    // 31 deltas: one under the fold threshold (32), so no fold runs.
    for (let i = 0; i < 31; i++) await counts.record([change]);
    await counts.settled();
    expect(recounts).toBe(0);
    await counts.dropDatasets(team, [datasetId]);
    // One more delta: a tally kept past the drop would reach 32 and fold (a recount, as there is no base).
    await counts.record([change]);
    await counts.settled();
    expect(recounts).toBe(0);
  });
});
