import { afterAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';
import { client } from '../fixtures/datasets/client.js';

const opened: TestApp[] = [];
afterAll(async () => {
  // The last app drops the shared database; the others only close.
  for (const t of opened.slice(0, -1)) await t.app.close();
  await opened.at(-1)?.close();
});

describe('dataset search indexes at start-up', () => {
  it('are rebuilt from MongoDB in the background, before any search', async () => {
    const first = await buildTestApp();
    opened.push(first);
    await createUser(first, { username: 'warm', password: 'password-w1' });
    const api = client(first, await login(first, 'warm', 'password-w1'));
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Warm' }));
    const collectionId = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'c', type: 'virtual' }));
    await api.ok(api.post('/core/dataset/data/pushData', { collectionId, data: [{ q: 'warm start item' }] }));
    await first.app.datasets.trainingWorker.drain();
    expect(first.app.datasets.ctx.searchIndex.isLoaded(datasetId)).toBe(false);

    const second = await buildTestApp({ MONGODB_URI: first.config.MONGODB_URI });
    opened.push(second);
    const index = second.app.datasets.ctx.searchIndex;
    const deadline = Date.now() + 20_000;
    while (!index.isLoaded(datasetId) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(index.isLoaded(datasetId)).toBe(true);

    const found = await index.fullTextSearch([datasetId], 'local-lexical-v1', ['warm'], 5, new Set());
    expect(found.map((hit) => hit.item.q)).toEqual(['warm start item']);
  });
});
