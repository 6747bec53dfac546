import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CommandStartedEvent } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, client } from '../fixtures/datasets/client.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { commandsDuring } from '../helpers/command-counter.js';
import { type FakeModelProvider, openAiEmbeddingAnswer, startFakeModelProvider } from '../helpers/fake-model-provider.js';
import { createUser, login } from '../helpers/platform.js';

/**
 * Two server processes on one database (two apps with their own clients and in-memory indexes):
 * index-changing writes through one are searchable through the other within 2 s, and a process
 * started on an existing database opens the stored index instead of rebuilding it.
 */
let provider: FakeModelProvider;
let one: TestApp;
let two: TestApp;
let apiOne: Client;
let apiTwo: Client;
let datasetId: string;
let collectionId: string;

interface SearchList {
  list: { id: string; q: string; sourceName: string; collectionId: string }[];
}

beforeAll(async () => {
  // A second vector model (served by a fake provider) for the model switch.
  provider = await startFakeModelProvider((request) => openAiEmbeddingAnswer((request.body as { input: string[] }).input));
  const dir = await mkdtemp(join(tmpdir(), 'search-replicas-'));
  const models = join(dir, 'config.json');
  await writeFile(models, JSON.stringify({ vectorModels: [{ model: 'fake-embed', name: 'Fake embed', provider: 'openai', defaultToken: 512, maxToken: 3000, weight: 100, requestUrl: provider.baseUrl }] }));
  one = await buildTestApp({ MODEL_CONFIG_PATH: models });
  two = await buildTestApp({ MODEL_CONFIG_PATH: models, MONGODB_URI: one.config.MONGODB_URI });
  await createUser(one, { username: 'replica', password: 'password-r1' });
  apiOne = client(one, await login(one, 'replica', 'password-r1'));
  apiTwo = client(two, await login(two, 'replica', 'password-r1'));
  datasetId = await apiOne.ok<string>(apiOne.post('/core/dataset/create', { name: 'Shared' }));
  collectionId = await apiOne.ok<string>(apiOne.post('/core/dataset/collection/create', { datasetId, name: 'first', type: 'virtual' }));
  await apiOne.ok(apiOne.post('/core/dataset/data/insertData', { collectionId, q: 'The seed item about lighthouses.' }));
});

afterAll(async () => {
  await two?.app.close();
  await one?.close();
  await provider?.close();
});

const search = (api: Client, text: string, searchMode = 'fullTextRecall') => api.ok<SearchList>(api.post('/core/dataset/searchTest', { datasetId, text, searchMode }));

/** Polls `check` for up to 2 s (the freshness the deployment promises); returns its last result. */
async function within2s<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 2000;
  let value = await read();
  while (!done(value) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    value = await read();
  }
  return value;
}

const has = (q: string) => (result: SearchList) => result.list.some((item) => item.q === q);
const lacks = (q: string) => (result: SearchList) => !has(q)(result);

describe('dataset search across two processes on one database', () => {
  it('an insert, update and delete through one process show in the other within 2 s', async () => {
    expect((await search(apiTwo, 'lighthouses')).list.map((item) => item.q)).toEqual(['The seed item about lighthouses.']);

    const q = 'Inserted through process one: the harbour pilot schedule.';
    const dataId = await apiOne.ok<string>(apiOne.post('/core/dataset/data/insertData', { collectionId, q }));
    expect(has(q)(await within2s(() => search(apiTwo, 'harbour pilot'), has(q)))).toBe(true);
    expect(has(q)(await within2s(() => search(apiTwo, 'harbour pilot schedule', 'embedding'), has(q)))).toBe(true);

    const updated = 'Updated through process one: the ferry timetable.';
    await apiOne.ok(apiOne.post('/core/dataset/data/update', { dataId, q: updated }));
    expect(has(updated)(await within2s(() => search(apiTwo, 'ferry timetable'), has(updated)))).toBe(true);
    expect(lacks(q)(await within2s(() => search(apiTwo, 'harbour pilot'), lacks(q)))).toBe(true);

    await apiOne.ok(apiOne.post('/core/dataset/data/delete', { id: dataId }));
    expect(lacks(updated)(await within2s(() => search(apiTwo, 'ferry timetable', 'mixedRecall'), lacks(updated)))).toBe(true);
  });

  it('training completion, a rename, a forbidden collection and a collection delete show in the other process within 2 s', async () => {
    const second = await apiOne.ok<string>(apiOne.post('/core/dataset/collection/create', { datasetId, name: 'second', type: 'virtual' }));
    const trained = 'Trained by the worker of process one: glacier survey notes.';
    await apiOne.ok(apiOne.post('/core/dataset/data/pushData', { collectionId: second, data: [{ q: trained }] }));
    expect(lacks(trained)(await search(apiTwo, 'glacier survey'))).toBe(true);
    await one.app.datasets.trainingWorker.drain();
    const found = await within2s(() => search(apiTwo, 'glacier survey'), has(trained));
    expect(found.list.find((item) => item.q === trained)?.sourceName).toBe('second');

    await apiOne.ok(apiOne.post('/core/dataset/collection/update', { id: second, name: 'renamed' }));
    const renamed = await within2s(
      () => search(apiTwo, 'glacier survey'),
      (result) => result.list.some((item) => item.sourceName === 'renamed'),
    );
    expect(renamed.list.find((item) => item.q === trained)?.sourceName).toBe('renamed');

    await apiOne.ok(apiOne.post('/core/dataset/collection/update', { id: second, forbid: true }));
    expect(lacks(trained)(await within2s(() => search(apiTwo, 'glacier survey'), lacks(trained)))).toBe(true);
    await apiOne.ok(apiOne.post('/core/dataset/collection/update', { id: second, forbid: false }));
    expect(has(trained)(await within2s(() => search(apiTwo, 'glacier survey'), has(trained)))).toBe(true);

    await apiOne.ok(apiOne.post('/core/dataset/collection/delete', { id: second }));
    expect(lacks(trained)(await within2s(() => search(apiTwo, 'glacier survey', 'embedding'), lacks(trained)))).toBe(true);
  });

  it('a switch of vector model through one process: the other searches the re-embedded vectors', async () => {
    const switched = await apiOne.ok<string>(apiOne.post('/core/dataset/create', { name: 'Switched', vectorModel: 'fake-embed' }));
    const target = await apiOne.ok<string>(apiOne.post('/core/dataset/collection/create', { datasetId: switched, name: 'c', type: 'virtual' }));
    const q = 'Volcanic ash forecast for the northern airports.';
    await apiOne.ok(apiOne.post('/core/dataset/data/insertData', { collectionId: target, q }));
    const searchSwitched = () => apiTwo.ok<SearchList>(apiTwo.post('/core/dataset/searchTest', { datasetId: switched, text: 'volcanic ash forecast airports', searchMode: 'embedding' }));
    expect((await searchSwitched()).list.map((item) => item.q)).toEqual([q]);

    await apiOne.ok(apiOne.post('/core/dataset/training/rebuildEmbedding', { datasetId: switched, vectorModel: 'local-lexical-v1' }));
    await one.app.datasets.trainingWorker.drain();
    const found = await within2s(searchSwitched, has(q));
    expect(found.list.map((item) => item.q)).toEqual([q]);
  });

  it('a dataset deleted through one process: the other frees its index at its next sweep', async () => {
    const doomed = await apiOne.ok<string>(apiOne.post('/core/dataset/create', { name: 'Doomed' }));
    const target = await apiOne.ok<string>(apiOne.post('/core/dataset/collection/create', { datasetId: doomed, name: 'c', type: 'virtual' }));
    await apiOne.ok(apiOne.post('/core/dataset/data/insertData', { collectionId: target, q: 'Soon deleted: the lighthouse keeper diary.' }));
    await apiTwo.ok(apiTwo.post('/core/dataset/searchTest', { datasetId: doomed, text: 'lighthouse keeper' }));
    const index = two.app.datasets.ctx.searchIndex;
    expect(index.isLoaded(doomed)).toBe(true);
    await apiOne.ok(apiOne.post('/core/dataset/delete', { id: doomed }));
    expect(index.isLoaded(doomed)).toBe(true);
    expect(await index.evictDeleted()).toBe(1);
    expect(index.isLoaded(doomed)).toBe(false);
    expect(index.isLoaded(datasetId)).toBe(true);
    expect(await two.app.mongo.db.collection('dataset_index_meta').countDocuments({ _id: doomed as never })).toBe(0);
  });

  it('a warm searchTest reads no collection, data item, vector or stored index: only auth and its leased stamps, each at most once', async () => {
    await search(apiTwo, 'lighthouses', 'mixedRecall');
    for (const searchMode of ['embedding', 'fullTextRecall', 'mixedRecall']) {
      const commands = await commandsDuring(two.app, () => search(apiTwo, 'lighthouses', searchMode));
      // Reads only: a snapshot written in the background meanwhile is not the request's work.
      const reads = commands.filter((command) => ['find', 'aggregate', 'count', 'distinct'].includes(command.name));
      expect(reads.filter((command) => /^dataset_(collections|datas|vectors|index_)/.test(command.collection))).toEqual([]);
      // Stamps are leased (100 ms for credentials and the team's list, 1 s for the index): a slow
      // machine may read each again, but never one twice in a request.
      const stampReads = commands.filter((command) => command.collection === 'version_stamps' && command.name === 'find').map((command) => command.key);
      expect(stampReads.length, JSON.stringify(stampReads)).toBe(new Set(stampReads).size);
      expect(commands.every((command) => command.name !== 'getMore')).toBe(true);
    }
  });
});

describe('a process started on an existing database', () => {
  it('opens the stored index (snapshot parts and later changes), reading no data item or vector', async () => {
    const first = await buildTestApp();
    await createUser(first, { username: 'restart', password: 'password-r2' });
    const api = client(first, await login(first, 'restart', 'password-r2'));
    const dataset = await api.ok<string>(api.post('/core/dataset/create', { name: 'Restarted' }));
    const collection = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId: dataset, name: 'c', type: 'virtual' }));
    await api.ok(api.post('/core/dataset/data/pushData', { collectionId: collection, data: Array.from({ length: 30 }, (_, i) => ({ q: `Archive record ${i} of the observatory.` })) }));
    await first.app.datasets.trainingWorker.drain();
    // The first search builds the index from the data items and stores a snapshot of it.
    await api.ok(api.post('/core/dataset/searchTest', { datasetId: dataset, text: 'observatory' }));
    await api.ok(api.post('/core/dataset/data/insertData', { collectionId: collection, q: 'Written after the snapshot: the telescope log.' }));
    await first.app.close(); // not first.close(): the database stays for the next process

    const seen: string[] = [];
    const listen = (event: CommandStartedEvent) => {
      const target = event.command[event.commandName];
      if (typeof target === 'string') seen.push(`${event.commandName} ${target}`);
    };
    const second = await buildTestApp({ MONGODB_URI: first.config.MONGODB_URI }, (app) => void app.mongo.client.on('commandStarted', listen));
    try {
      const index = second.app.datasets.ctx.searchIndex;
      const deadline = Date.now() + 20_000;
      while (!index.isLoaded(dataset) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      const again = client(second, await login(second, 'restart', 'password-r2'));
      const result = await again.ok<SearchList>(again.post('/core/dataset/searchTest', { datasetId: dataset, text: 'telescope observatory', searchMode: 'mixedRecall', limit: 5000 }));
      second.app.mongo.client.off('commandStarted', listen);
      expect(result.list.map((item) => item.q)).toContain('Written after the snapshot: the telescope log.');
      expect(result.list.filter((item) => item.q.startsWith('Archive record'))).toHaveLength(30);
      expect(seen).toContain('find dataset_index_segments');
      expect(seen).toContain('find dataset_index_changes');
      expect(seen.filter((command) => /^(find|aggregate|count) dataset_(datas|vectors)$/.test(command))).toEqual([]);
    } finally {
      await second.close();
    }
  });
});
