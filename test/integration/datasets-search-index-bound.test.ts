import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, client } from '../fixtures/datasets/client.js';
import { buildReplica, buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';

/**
 * SEARCH_INDEX_MAX_BYTES on a real process: the warm-up stops at the bound, the least recently
 * searched index is evicted for the next one, and an evicted dataset's next search reopens it
 * with what another process wrote meanwhile. Metrics show the open indexes and evictions.
 */
let primary: TestApp;
let bounded: TestApp;
let apiPrimary: Client;
let apiBounded: Client;
const datasets: { id: string; collectionId: string; word: string }[] = [];

interface SearchList {
  list: { q: string }[];
}

const search = (api: Client, datasetId: string, text: string) => api.ok<SearchList>(api.post('/core/dataset/searchTest', { datasetId, text, searchMode: 'fullTextRecall' })).then((result) => result.list.map((item) => item.q));
const stats = () => bounded.app.datasets.ctx.searchIndex.stats();

beforeAll(async () => {
  primary = await buildTestApp();
  await createUser(primary, { username: 'bounded', password: 'password-b1' });
  apiPrimary = client(primary, await login(primary, 'bounded', 'password-b1'));
  for (const word of ['lighthouse', 'harbour', 'ferry']) {
    const id = await apiPrimary.ok<string>(apiPrimary.post('/core/dataset/create', { name: word }));
    const collectionId = await apiPrimary.ok<string>(apiPrimary.post('/core/dataset/collection/create', { datasetId: id, name: 'first', type: 'virtual' }));
    await apiPrimary.ok(apiPrimary.post('/core/dataset/data/insertData', { collectionId, q: `The ${word} item.` }));
    datasets.push({ id, collectionId, word });
  }
  // One item of ~15 characters is estimated at ~700 bytes: the bound holds one dataset's index.
  bounded = await buildReplica(primary, { SEARCH_INDEX_MAX_BYTES: '1000' });
  apiBounded = client(bounded, await login(bounded, 'bounded', 'password-b1'));
});

afterAll(async () => {
  await bounded?.close();
  await primary?.close();
});

describe('search index memory bound (SEARCH_INDEX_MAX_BYTES)', () => {
  it('the warm-up stops once the open indexes reach the bound', async () => {
    // The warm-up runs in the background: wait for its line, whatever it takes.
    while (!bounded.logs().includes('search index warm-up stopped')) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(stats()).toEqual({ open: 1, bytes: expect.any(Number), evictions: 0 });
    expect(stats().bytes).toBeGreaterThanOrEqual(1000);
    expect(primary.app.datasets.ctx.searchIndex.stats()).toMatchObject({ evictions: 0 }); // 1 GiB by default
  });

  it('evicts the least recently searched, reopens it with writes made meanwhile (here and by another process), and reports it in /metrics', async () => {
    const [a, b] = datasets as [(typeof datasets)[0], (typeof datasets)[0]];
    expect(await search(apiBounded, a.id, a.word)).toEqual([`The ${a.word} item.`]);
    expect(await search(apiBounded, b.id, b.word)).toEqual([`The ${b.word} item.`]);
    expect(bounded.app.datasets.ctx.searchIndex.isLoaded(a.id)).toBe(false);
    const evicted = stats().evictions;
    expect(evicted).toBeGreaterThanOrEqual(1);

    await apiPrimary.ok(apiPrimary.post('/core/dataset/data/insertData', { collectionId: a.collectionId, q: 'Written while evicted: the tide chart.' }));
    await apiBounded.ok(apiBounded.post('/core/dataset/data/insertData', { collectionId: b.collectionId, q: 'Written here into the open one: the storm warning.' }));
    expect(await search(apiBounded, a.id, 'tide chart')).toEqual(['Written while evicted: the tide chart.']);
    expect(await search(apiBounded, a.id, a.word)).toEqual([`The ${a.word} item.`]);
    expect(bounded.app.datasets.ctx.searchIndex.isLoaded(b.id)).toBe(false);
    await apiBounded.ok(apiBounded.post('/core/dataset/data/insertData', { collectionId: b.collectionId, q: 'Written here while evicted: the cargo manifest.' }));
    expect(await search(apiBounded, b.id, 'cargo manifest')).toEqual(['Written here while evicted: the cargo manifest.']);
    expect(await search(apiBounded, b.id, 'storm warning')).toEqual(['Written here into the open one: the storm warning.']);

    const metrics = await bounded.app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).toMatch(/^search_index_open_datasets 1$/m);
    expect(metrics.body).toMatch(new RegExp(`^search_index_bytes ${stats().bytes}$`, 'm'));
    expect(metrics.body).toMatch(new RegExp(`^search_index_evictions ${stats().evictions}$`, 'm'));
    expect(stats().evictions).toBeGreaterThan(evicted);
  });
});
