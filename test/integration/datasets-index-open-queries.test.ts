import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATA_INDEXES } from '../../src/platform/datasets/data/data.repo.js';
import { openFromSources } from '../../src/platform/datasets/search/index-open.js';
import { createIndexStore } from '../../src/platform/datasets/search/index-store.repo.js';
import { VECTOR_INDEXES } from '../../src/platform/datasets/search/vector.repo.js';
import type { IndexDeclaration } from '../../src/infra/mongo.js';
import { type Client, client } from '../fixtures/datasets/client.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { findFiltersDuring } from '../helpers/command-counter.js';
import { createUser, login } from '../helpers/platform.js';

/**
 * A dataset's search index built from its items (first open, model switch, lost snapshot) reads
 * the items and vectors of that dataset. On MongoDB a read whose filter leads no index scans the
 * whole collection, every team's items; FerretDB's test indexes serve any field, so only the
 * declarations tell: each read's filter must hold the first field of a declared index.
 */
let t: TestApp;
let api: Client;

beforeAll(async () => {
  t = await buildTestApp();
  await createUser(t, { username: 'index-open', password: 'password-io1' });
  api = client(t, await login(t, 'index-open', 'password-io1'));
});
afterAll(async () => {
  await t?.close();
});

const ledByIndex = (filter: Record<string, unknown>, declarations: IndexDeclaration[]) =>
  declarations.some((declaration) => Object.keys(declaration.key)[0]! in filter);

describe('a search index opened from its sources', () => {
  it('reads items and vectors through filters a declared index leads', async () => {
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'index open' }));
    const collectionId = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'c', type: 'virtual' }));
    await api.ok(api.post('/core/dataset/data/insertData', { collectionId, q: 'The lighthouse keeper.' }));
    const { data, vectors } = t.app.datasets.ctx.repos;
    const repos = { data, vectors, store: createIndexStore(t.app.mongo.db) };
    const model = (await t.app.mongo.db.collection('datasets').findOne({ name: 'index open' }))?.vectorModel as string;

    let items = 0;
    const vectorFilters: Record<string, unknown>[] = [];
    const dataFilters = await findFiltersDuring(t.app, 'dataset_datas', async () => {
      vectorFilters.push(...(await findFiltersDuring(t.app, 'dataset_vectors', async () => {
        items = (await openFromSources(repos, datasetId, model)).items.size;
      })));
    });
    expect(items).toBe(1);
    expect(dataFilters.length).toBeGreaterThan(0);
    expect(vectorFilters.length).toBeGreaterThan(0);
    for (const filter of dataFilters) expect(ledByIndex(filter, DATA_INDEXES), JSON.stringify(filter)).toBe(true);
    for (const filter of vectorFilters) expect(ledByIndex(filter, VECTOR_INDEXES), JSON.stringify(filter)).toBe(true);
  });
});
