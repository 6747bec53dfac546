/**
 * A training claim outlives a stall of its worker (or a clock of its worker behind the others')
 * well past one lock window: a second worker taking its items would pay their model calls again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client } from '../fixtures/datasets/client.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { login } from '../helpers/platform.js';

const LOCK_MS = 15_000;

describe('training claims', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp({ TRAINING_WORKER: 'false' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('a claim whose worker has not renewed it for longer than a lock window stays its own; one unrenewed for two windows lapses', async () => {
    const api = client(t, await login(t, 'root', 'root-password-1'));
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'claims' }));
    const collectionId = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'claims', type: 'virtual' }));
    await api.ok(api.post('/core/dataset/data/pushData', { collectionId, data: [{ q: 'claimed once' }] }));
    const trainings = t.app.datasets.ctx.repos.trainings;
    const at = Date.now();
    const [claimed] = await trainings.claimBatch(new Date(at), LOCK_MS, 10, 'stalled-worker');
    expect(claimed?.q).toBe('claimed once');
    // 20 s without a renewal (a stall, or the first worker's clock behind): still the first worker's.
    expect(await trainings.claimBatch(new Date(at + 20_000), LOCK_MS, 10, 'second-worker')).toEqual([]);
    const retaken = await trainings.claimBatch(new Date(at + 2 * LOCK_MS + 1_000), LOCK_MS, 10, 'second-worker');
    expect(retaken.map((item) => item._id)).toEqual([claimed?._id]);
    await trainings.release(retaken.map((item) => item._id));
  });
});
