/**
 * pushData's custom indexes and the training worker's batches (report-loop-audit #3): an index
 * longer than the vector model takes is reported in `overToken`, as an over-long q is, and a
 * claimed batch is bounded by the characters it would embed, not only by its item count.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, client } from '../fixtures/datasets/client.js';
import { createTrainingWorker } from '../../src/platform/datasets/training/training-worker.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';

let t: TestApp;
let api: Client;
let datasetId: string;
let collectionId: string;
let teamId: string;

beforeAll(async () => {
  t = await buildTestApp();
  ({ teamId } = await createUser(t, { username: 'pusher', password: 'password-p1' }));
  api = client(t, await login(t, 'pusher', 'password-p1'));
  // The built-in local model: 3,000 tokens per text.
  datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Pushed' }));
  collectionId = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'manual', type: 'virtual' }));
});

afterAll(async () => {
  await t?.close();
});

/** `count` words of 4 letters: `count` tokens (each run of letters under 8 counts 1). */
const words = (count: number, seed: string) => Array.from({ length: count }, (_, i) => `${seed}${i % 10}`.slice(0, 4)).join(' ');
const queued = () => t.app.datasets.ctx.repos.trainings.countByDataset(teamId, datasetId);

describe('pushData custom indexes', () => {
  it('an item with an index over the model’s maxToken is reported in overToken as sent; one within it is queued', async () => {
    const long = { q: 'item with a long index', indexes: [{ text: 'short index' }, { text: words(3500, 'lo') }] };
    const fits = { q: 'item with a fitting index', indexes: [{ text: words(2900, 'fi') }] };
    const result = await api.ok(api.post('/core/dataset/data/pushData', { collectionId, data: [long, fits] }));
    expect(result).toEqual({ insertLen: 1, overToken: [long], repeat: [], error: [] });
    const { trainings } = t.app.datasets.ctx.repos;
    const [item] = await trainings.claimBatch(new Date(), 15_000, 10, 'inspect');
    expect(item?.q).toBe('item with a fitting index');
    await trainings.release([item!._id]);
    await t.app.datasets.trainingWorker.drain();
    expect(await queued()).toBe(0);
  });

  it('QA training does not embed custom indexes, so they are not counted there', async () => {
    const qa = { q: 'a chunk for Q/A', indexes: [{ text: words(3500, 'qa') }] };
    const result = await api.ok<{ overToken: unknown[] }>(api.post('/core/dataset/data/pushData', { collectionId, trainingMode: 'qa', data: [qa] }));
    expect(result.overToken).toEqual([]);
    const { trainings } = t.app.datasets.ctx.repos;
    const items = await trainings.claimBatch(new Date(), 15_000, 10, 'cleanup');
    await trainings.deleteItems(items);
  });
});

describe('claimed training batches', () => {
  it('hold at most batchChars characters of text (the first item always)', async () => {
    // Five items of ~4,000 characters each (q, a and an index).
    const data = Array.from({ length: 5 }, (_, i) => ({ q: `${i} ${'q'.repeat(1000)}`, a: 'a'.repeat(1000), indexes: [{ text: `${i} ${'x '.repeat(1000)}` }] }));
    expect((await api.ok<{ insertLen: number }>(api.post('/core/dataset/data/pushData', { collectionId, data }))).insertLen).toBe(5);
    const { trainings } = t.app.datasets.ctx.repos;
    const two = await trainings.claimBatch(new Date(), 15_000, 128, 'bounded', 10_000);
    expect(two).toHaveLength(2);
    await trainings.release(two.map((item) => item._id));
    const one = await trainings.claimBatch(new Date(), 15_000, 128, 'tiny', 100);
    expect(one).toHaveLength(1);
    await trainings.release(one.map((item) => item._id));
    // The worker claims by its batchChars: 2, 2, then 1.
    const worker = createTrainingWorker(t.app.datasets.ctx, { batchChars: 10_000 });
    expect(await worker.runOnce()).toBe(2);
    expect(await worker.runOnce()).toBe(2);
    expect(await worker.runOnce()).toBe(1);
    expect(await queued()).toBe(0);
  });
});
