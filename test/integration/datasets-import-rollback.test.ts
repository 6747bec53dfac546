/**
 * An import whose queueing fails after its collection was created takes the collection back
 * whole: what the training worker already made of the first items (data items, vectors, their
 * search-index entries) goes with it. Before, only the queue and the collection went, leaving
 * trained chunks searchable (and counted in the plan) under a collection nobody could see or delete.
 */
import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuthContext } from '../../src/platform/auth/types.js';
import { createCollectionImportService } from '../../src/platform/datasets/collections/collection-import.service.js';
import type { DatasetsContext } from '../../src/platform/datasets/context.js';
import { type Client, client } from '../fixtures/datasets/client.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';

let t: TestApp;
let api: Client;
let teamId: string;
let auth: AuthContext;

beforeAll(async () => {
  t = await buildTestApp();
  const user = await createUser(t, { username: 'import-rollback', password: 'password-1' });
  teamId = user.teamId;
  auth = { ...(await t.app.identity.memberContext(user.tmbId))!, authType: 'token' };
  api = client(t, await login(t, 'import-rollback', 'password-1'));
});
afterAll(async () => {
  await t?.close();
});

const count = (name: string, filter: Record<string, unknown>) => t.app.mongo.db.collection(name).countDocuments(filter);

describe('a failed import', () => {
  it('removes what the worker already trained of it before the collection goes', async () => {
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Imports' }));
    const dataset = (await t.app.datasets.ctx.repos.datasets.findById(teamId, datasetId))!;
    const ctx = t.app.datasets.ctx;
    // The queue insert lands and the worker trains it; then the step after fails (the database went away).
    const failing: DatasetsContext = {
      ...ctx,
      repos: {
        ...ctx.repos,
        trainings: {
          ...ctx.repos.trainings,
          insertMany: async (docs) => {
            await ctx.repos.trainings.insertMany(docs);
            await t.app.datasets.trainingWorker.drain();
            throw new Error('connection reset');
          },
        },
      },
    };
    const importer = createCollectionImportService(failing);
    const items = [{ q: 'Zebras sleep standing up in the savanna.' }, { q: 'Zebras have black and white stripes.' }];
    await expect(importer.insertWithItems(auth, dataset, { parentId: null, name: 'Half imported', type: 'virtual', trainingType: 'chunk', chunkSize: 512 }, items)).rejects.toThrow('connection reset');

    const inDataset = { datasetId: new ObjectId(datasetId) };
    expect(await count('dataset_collections', inDataset)).toBe(0);
    expect(await count('dataset_trainings', inDataset)).toBe(0);
    expect(await count('dataset_datas', inDataset)).toBe(0);
    expect(await count('dataset_vectors', inDataset)).toBe(0);
    const found = await api.ok<{ list: { q: string }[] }>(api.post('/core/dataset/searchTest', { datasetId, text: 'zebras stripes', searchMode: 'mixedRecall' }));
    expect(found.list).toEqual([]);

    // A retry imports it whole.
    await api.ok(api.post('/core/dataset/collection/create/text', { datasetId, name: 'Imported', text: items.map((item) => item.q).join('\n\n') }));
    await t.app.datasets.trainingWorker.drain();
    const again = await api.ok<{ list: { q: string }[] }>(api.post('/core/dataset/searchTest', { datasetId, text: 'zebras stripes', searchMode: 'mixedRecall' }));
    expect(again.list.length).toBeGreaterThan(0);
  });
});
