import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';
import { type Client, client } from '../fixtures/datasets/client.js';

let t: TestApp;
let api: Client;
let datasetId: string;
let secret: string;
let other: string;

beforeAll(async () => {
  t = await buildTestApp();
  await createUser(t, { username: 'racer', password: 'password-r1' });
  api = client(t, await login(t, 'racer', 'password-r1'));
  datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'race' }));
  secret = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'secret', type: 'virtual' }));
  other = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'public', type: 'virtual' }));
  await api.ok(api.post('/core/dataset/data/insertData', { collectionId: secret, q: 'banana secret recipe' }));
  await api.ok(api.post('/core/dataset/data/insertData', { collectionId: other, q: 'banana public recipe' }));
  await api.ok(api.post('/core/dataset/collection/update', { id: secret, forbid: true }));
});

afterAll(async () => {
  await t?.close();
});

const search = async () =>
  (await api.ok<{ list: { collectionId: string }[] }>(api.post('/core/dataset/searchTest', { datasetId, text: 'banana recipe', searchMode: 'fullTextRecall' }))).list.map(
    (item) => item.collectionId,
  );

it('a collection change landing while a search reads the collections: neither that search nor a later one returns forbidden data', async () => {
  // Any collection change makes the next search read the collections again.
  await api.ok(api.post('/core/dataset/collection/update', { id: other, name: 'public-x' }));
  const repo = t.app.datasets.ctx.repos.collections;
  const original = repo.byDatasets;
  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let readStarted!: () => void;
  const reading = new Promise<void>((resolve) => {
    readStarted = resolve;
  });
  let held = false;
  // The first read (search A's) is slow: it answers only once the changes below are applied.
  repo.byDatasets = async (...args) => {
    const rows = await original(...args);
    if (!held) {
      held = true;
      readStarted();
      await gate;
    }
    return rows;
  };
  try {
    const a = search();
    await reading;
    // Meanwhile `other` is forbidden too (a collection change applied while A reads).
    await api.ok(api.post('/core/dataset/collection/update', { id: other, forbid: true }));
    // Search B, started after that change, reads again instead of sharing A's older read.
    // (Sharing it, B would wait for A's read: the race names that instead of the test timing out.)
    const stuck = new Promise((resolve) => setTimeout(resolve, 10_000, 'waited for the read of a search started before the change'));
    const b = await Promise.race([search(), stuck]);
    release();
    // A uses what it read (before the forbid): `other`, never `secret`.
    expect(await a).toEqual([other]);
    expect(b).toEqual([]);
  } finally {
    repo.byDatasets = original;
    release();
  }
  await api.ok(api.post('/core/dataset/collection/update', { id: other, forbid: false }));
  expect(await search()).toEqual([other]);
});
