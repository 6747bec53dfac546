/**
 * Every training item fits in one claimed batch (TRAINING_BATCH_CHARS): a batch's first item is
 * claimed whatever its size, so a push refuses (overToken) an item past it, and q and a count
 * together against the token limit as the reference counts them. Rebuild items count the
 * characters of the data item they re-embed, not of their placeholder text.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, client } from '../fixtures/datasets/client.js';
import { queueNextRebuild } from '../../src/platform/datasets/training/rebuild.js';
import { TRAINING_BATCH_CHARS } from '../../src/platform/datasets/training/training-records.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';

let t: TestApp;
let api: Client;
let teamId: string;
let tmbId: string;

beforeAll(async () => {
  // A body past TRAINING_BATCH_CHARS characters.
  t = await buildTestApp({ BODY_LIMIT_BYTES: String(4 * TRAINING_BATCH_CHARS) });
  ({ teamId, tmbId } = await createUser(t, { username: 'bounded', password: 'password-b1' }));
  api = client(t, await login(t, 'bounded', 'password-b1'));
});

afterAll(async () => {
  await t?.close();
});

/** A dataset on the built-in local model (3,000 tokens per text) with one manual collection. */
async function collectionIn(name: string) {
  const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name }));
  const collectionId = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'manual', type: 'virtual' }));
  return { datasetId, collectionId };
}

describe('pushed items fit in one training batch', () => {
  it('q and a together over 1.3 × maxToken characters are overToken, as the reference counts them', async () => {
    const { datasetId, collectionId } = await collectionIn('Long answers');
    const longAnswer = { q: 'a short question', a: 'answer '.repeat(600) };
    const fits = { q: 'another question', a: 'answer '.repeat(500) };
    const result = await api.ok(api.post('/core/dataset/data/pushData', { collectionId, data: [longAnswer, fits] }));
    expect(result).toEqual({ insertLen: 1, overToken: [longAnswer], repeat: [], error: [] });
    expect(await t.app.datasets.ctx.repos.trainings.countByDataset(teamId, datasetId)).toBe(1);
  });

  it('an item within the token limits but with more characters than a batch holds is overToken', async () => {
    const { datasetId, collectionId } = await collectionIn('Wide indexes');
    // Whitespace counts no tokens: 12 indexes of 2 tokens each (at most 100,000 characters each,
    // the schema's bound), past TRAINING_BATCH_CHARS characters together.
    const indexes = Array.from({ length: 12 }, (_, i) => ({ text: `left${i}${' '.repeat(TRAINING_BATCH_CHARS / 11)}right` }));
    const wide = { q: 'an item with wide indexes', indexes };
    const narrow = { q: 'an item with a narrow index', indexes: [{ text: 'narrow index' }] };
    const result = await api.ok<{ insertLen: number; overToken: { q: string }[] }>(api.post('/core/dataset/data/pushData', { collectionId, data: [wide, narrow] }));
    expect(result.insertLen).toBe(1);
    expect(result.overToken.map((item) => item.q)).toEqual([wide.q]);
    expect(await t.app.datasets.ctx.repos.trainings.countByDataset(teamId, datasetId)).toBe(1);
    // insertData embeds at once and refuses it the same way, naming the field.
    const inserted = await api.post('/core/dataset/data/insertData', { collectionId, ...wide });
    expect(inserted.status).toBe(400);
    expect(inserted.body.message).toContain("Invalid field 'indexes'");
    // An update that would make a stored item that wide is refused the same way, and changes nothing.
    const stored = await api.ok<string>(api.post('/core/dataset/data/insertData', { collectionId, ...narrow }));
    const before = await t.app.datasets.ctx.repos.data.findById(teamId, stored);
    const widened = await api.post('/core/dataset/data/update', { dataId: stored, indexes });
    expect(widened.status).toBe(400);
    expect(widened.body.message).toContain("Invalid field 'indexes'");
    expect(await t.app.datasets.ctx.repos.data.findById(teamId, stored)).toEqual(before);
  });
});

describe('rebuild items', () => {
  it('are claimed by the characters of the data items they re-embed', async () => {
    // The items queued above are trained first: the claims below see rebuild items only.
    await t.app.datasets.trainingWorker.drain();
    const { datasetId, collectionId } = await collectionIn('Rebuilt');
    // Three stored items of ~3,500 characters each (q is their one index).
    for (const n of [1, 2, 3]) await api.ok(api.post('/core/dataset/data/insertData', { collectionId, q: `${n} ${'word '.repeat(700)}` }));
    const { data, trainings } = t.app.datasets.ctx.repos;
    await data.markRebuilding(teamId, datasetId);
    const item = { teamId, tmbId, datasetId, billId: '', mode: 'chunk' as const, model: (await t.app.datasets.ctx.repos.datasets.vectorModelOf(teamId, datasetId))!, prompt: '', weight: 0 };
    for (let i = 0; i < 3; i++) expect(await queueNextRebuild(t.app.datasets.ctx, item)).toBe(true);
    // Two fit in 8,000 characters, not the third.
    const claimed = await trainings.claimBatch(new Date(), 15_000, 128, 'rebuild-bound', 8_000);
    expect(claimed).toHaveLength(2);
    await trainings.release(claimed.map((one) => one._id));
    const alone = await trainings.claimBatch(new Date(), 15_000, 128, 'rebuild-alone', 100);
    expect(alone).toHaveLength(1);
    await trainings.release(alone.map((one) => one._id));
  });
});
