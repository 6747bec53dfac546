import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLLECTION_CACHE_BYTES, createCollectionCache } from '../../src/platform/datasets/collections/collection-cache.js';
import { createVersionStamps } from '../../src/infra/version-stamps.js';
import { type Client, client } from '../fixtures/datasets/client.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';

/**
 * The collection cache keeps each collection with its user metadata (any JSON up to the 1 MB
 * body limit): bounded by count alone, a member could make every replica hold gigabytes. Its
 * byte budget keeps a team of big collections within its share, every collection read right.
 */
let t: TestApp;
let api: Client;
let teamId: string;

beforeAll(async () => {
  t = await buildTestApp();
  teamId = (await createUser(t, { username: 'big-meta', password: 'password-bm1' })).teamId;
  api = client(t, await login(t, 'big-meta', 'password-bm1'));
});
afterAll(() => t.close());

describe('collections with large metadata', () => {
  it('are read whole while the cache stays within a team’s share', async () => {
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'heavy' }));
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      const metadata = { note: `${i}:${'m'.repeat(900_000)}` };
      ids.push(await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: `c${i}`, type: 'virtual', metadata })));
    }
    const cache = createCollectionCache({ stamps: createVersionStamps(t.app.mongo.db, { leaseMs: 100 }), load: (id) => t.app.datasets.ctx.repos.collections.findForAuth(id) });
    for (const [i, id] of ids.entries()) {
      const found = await cache.find(teamId, id);
      expect(String(found?.metadata.note).startsWith(`${i}:`)).toBe(true);
      expect(cache.weight()).toBeLessThanOrEqual(COLLECTION_CACHE_BYTES.perTeam);
    }
    // Twelve of ~0.9 MB would be over 10 MB kept: some were let go.
    expect(cache.weight()).toBeGreaterThan(0);
  });
});
