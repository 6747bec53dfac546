import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';
import { type Client, client } from '../fixtures/datasets/client.js';
import { type LocalSite, startLocalSite } from '../helpers/local-site.js';

/** What FastGPT's own web client and API users send to the dataset routes works unchanged. */
let t: TestApp;
let api: Client;
let site: LocalSite;
let siteUrl: string;
let datasetId: string;

beforeAll(async () => {
  site = await startLocalSite((_req, res) => {
    res.setHeader('content-type', 'text/html');
    res.end('<html><head><title>Page title</title></head><body><p>Body text of the page.</p></body></html>');
  });
  siteUrl = site.url;
  t = await buildTestApp({ SSRF_ALLOW_PRIVATE: 'true' });
  await createUser(t, { username: 'client-user', password: 'password-u1' });
  api = client(t, await login(t, 'client-user', 'password-u1'));
  datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Client dataset' }));
});

afterAll(async () => {
  await t?.close();
  await site?.close();
});

describe('lists: simple lists without paging, capped sizes clamped', () => {
  it('collection/list with simple:true returns every collection, with pageSize 50 clamped', async () => {
    for (let i = 0; i < 35; i++) await api.ok(api.post('/core/dataset/collection/create', { datasetId, name: `c${i}` }));
    const simple = await api.ok<{ data: unknown[]; total: number }>(api.post('/core/dataset/collection/list', { datasetId, simple: true, pageSize: 50 }));
    expect(simple.total).toBe(35);
    expect(simple.data).toHaveLength(35);
    const paged = await api.ok<{ data: unknown[]; pageSize: number }>(api.post('/core/dataset/collection/list', { datasetId, pageNum: 1, pageSize: 50 }));
    expect(paged.pageSize).toBe(30);
    expect(paged.data).toHaveLength(30);
  });

  it('searchTest with a limit above the cap is clamped, not refused', async () => {
    const response = await api.post('/core/dataset/searchTest', { datasetId, text: 'anything', limit: 50_000 });
    expect(response.status, response.raw).toBe(200);
    expect((response.body.data as { limit: number }).limit).toBe(20_000);
  });
});

describe('data items with more than five custom indexes', () => {
  it('pushData keeps a batch whose items carry many indexes; only the item over the cap is reported', async () => {
    const collectionId = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'indexed' }));
    const eight = Array.from({ length: 8 }, (_, i) => ({ text: `alias ${i}` }));
    const tooMany = Array.from({ length: 51 }, (_, i) => ({ text: `x ${i}` }));
    const result = await api.ok<{ insertLen: number; error: { q: string }[] }>(
      api.post('/core/dataset/data/pushData', {
        collectionId,
        trainingMode: 'chunk',
        data: [
          { q: 'item with eight indexes', indexes: eight },
          { q: 'item with too many', indexes: tooMany },
          { q: 'plain item' },
        ],
      }),
    );
    expect(result.insertLen).toBe(2);
    expect(result.error.map((item) => item.q)).toEqual(['item with too many']);
    await t.app.datasets.trainingWorker.drain();

    const list = await api.ok<{ data: { _id: string; q: string }[] }>(api.post('/core/dataset/data/list', { collectionId }));
    const dataId = list.data.find((item) => item.q === 'item with eight indexes')!._id;
    const detail = await api.ok<{ indexes: { _id: string; dataId: string; text: string; defaultIndex: boolean }[] }>(api.get('/core/dataset/data/detail', { id: dataId }));
    expect(detail.indexes).toHaveLength(9);
    expect(detail.indexes.filter((index) => index.defaultIndex).map((index) => index.text)).toEqual(['item with eight indexes']);
    for (const index of detail.indexes) expect(index._id).toMatch(/^[0-9a-f]{24}$/);
    expect(new Set(detail.indexes.map((index) => index._id)).size).toBe(9);
    // Stable across reads, and the client may send them back on update.
    const again = await api.ok<{ indexes: { _id: string }[] }>(api.get('/core/dataset/data/detail', { id: dataId }));
    expect(again.indexes.map((index) => index._id)).toEqual(detail.indexes.map((index) => index._id));
    await api.ok(api.put('/core/dataset/data/update', { dataId, q: 'item with eight indexes', indexes: detail.indexes }));
    const kept = await api.ok<{ indexes: { _id: string }[] }>(api.get('/core/dataset/data/detail', { id: dataId }));
    expect(kept.indexes.map((index) => index._id).sort()).toEqual(detail.indexes.map((index) => index._id).sort());
  });

  it('insertData accepts more than five custom indexes and names the field above the cap', async () => {
    const collectionId = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'manual' }));
    const id = await api.ok<string>(api.post('/core/dataset/data/insertData', { collectionId, q: 'manual q', a: 'manual a', indexes: Array.from({ length: 7 }, (_, i) => ({ text: `m ${i}` })) }));
    const detail = await api.ok<{ indexes: unknown[] }>(api.get('/core/dataset/data/detail', { id }));
    // The seven given plus the default index (q + a).
    expect(detail.indexes).toHaveLength(8);
    const refused = await api.post('/core/dataset/data/insertData', { collectionId, q: 'other', indexes: Array.from({ length: 51 }, (_, i) => ({ text: `n ${i}` })) });
    expect(refused.status).toBe(400);
    expect(refused.body.message).toContain('indexes');
  });
});

describe('link collections', () => {
  it('are named by their URL, as the reference names them', async () => {
    const link = `${siteUrl}/docs/page`;
    const created = await api.ok<{ collectionId: string }>(api.post('/core/dataset/collection/create/link', { datasetId, link, name: 'ignored by the reference' }));
    const detail = await api.ok<{ name: string; rawLink: string; sourceName: string }>(api.get('/core/dataset/collection/detail', { id: created.collectionId }));
    expect(detail).toMatchObject({ name: link, rawLink: link, sourceName: link });
  });
});
