import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, client } from '../fixtures/datasets/client.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';

/**
 * A dataset with many collections: its delete bumps one stamp per collection. Sent all at once,
 * those updates stalled FerretDB 1.24 (and with it every request of the service) for good.
 */
let t: TestApp;
let api: Client;

beforeAll(async () => {
  t = await buildTestApp();
  await createUser(t, { username: 'wide', password: 'password-w1' });
  api = client(t, await login(t, 'wide', 'password-w1'));
});

afterAll(async () => {
  await t?.close();
});

describe('deleting a dataset of 60 collections', () => {
  it('answers, and the service answers other requests after it', async () => {
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'wide' }));
    for (let i = 0; i < 60; i++) await api.ok(api.post('/core/dataset/collection/create', { datasetId, name: `c${i}`, type: 'virtual' }));
    await api.ok(api.del('/core/dataset/delete', { id: datasetId }));
    const list = await api.ok<unknown[]>(api.post('/core/dataset/list', {}));
    expect(list.some((dataset) => (dataset as { _id: string })._id === datasetId)).toBe(false);
    expect((await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
  }, 120_000);
});
