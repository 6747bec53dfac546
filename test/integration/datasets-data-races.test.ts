import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type Client, client } from '../fixtures/datasets/client.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { type FakeModelProvider, openAiEmbeddingAnswer, startFakeModelProvider } from '../helpers/fake-model-provider.js';
import { createUser, login } from '../helpers/platform.js';

/**
 * Writers of one data item's indexes racing each other (concurrent data/update calls, an update
 * racing a rebuild's embedding): the item ends as one serial order of the writes that answered
 * 200 leaves it, with exactly its index vectors stored and searchable, none orphaned.
 */
let provider: FakeModelProvider;
let t: TestApp;
let api: Client;
let teamId: string;
/** While set, embedding calls for texts containing `gatedText` wait for it; `gateSeen` resolves on the first. */
let gate: Promise<void> | undefined;
let gatedText = '';
let gateSeen: (() => void) | undefined;

interface Index {
  dataId: string;
  text: string;
  defaultIndex: boolean;
}
interface Detail {
  q: string;
  a: string;
  indexes: Index[];
}

beforeAll(async () => {
  provider = await startFakeModelProvider(async (request) => {
    const input = (request.body as { input: string[] }).input;
    if (gate && input.some((text) => text.includes(gatedText))) {
      gateSeen?.();
      await gate;
    }
    return openAiEmbeddingAnswer(input);
  });
  const dir = await mkdtemp(join(tmpdir(), 'datasets-races-'));
  const models = join(dir, 'config.json');
  await writeFile(models, JSON.stringify({ vectorModels: [{ model: 'fake-embed', name: 'Fake embed', provider: 'openai', defaultToken: 512, maxToken: 3000, weight: 100, requestUrl: provider.baseUrl }] }));
  t = await buildTestApp({ MODEL_CONFIG_PATH: models });
  teamId = (await createUser(t, { username: 'racer', password: 'password-r1' })).teamId;
  api = client(t, await login(t, 'racer', 'password-r1'));
});

afterAll(async () => {
  await t?.close();
  await provider?.close();
});

async function newItem(name: string, q: string, vectorModel: string) {
  const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name, vectorModel }));
  const collectionId = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'c', type: 'virtual' }));
  const dataId = await api.ok<string>(api.post('/core/dataset/data/insertData', { collectionId, q }));
  return { datasetId, dataId };
}

const detail = (dataId: string) => api.ok<Detail>(api.get('/core/dataset/data/detail', { id: dataId }));
const texts = (item: Detail) => item.indexes.map((index) => index.text).sort();

/** What search holds of the item (its vector ids, and the item's q) and the vectors MongoDB holds, against the stored item. */
async function expectIndexedAsStored(datasetId: string, dataId: string, model: string) {
  const item = await detail(dataId);
  const ids = item.indexes.map((index) => index.dataId).sort();
  const stored = await t.app.mongo.db.collection('dataset_vectors').find({ dataId: new ObjectId(dataId) }).toArray();
  expect(stored.map((row) => String(row._id)).sort()).toEqual(ids);
  expect(new Set(stored.map((row) => row.model))).toEqual(new Set([model]));
  const entry = (await t.app.datasets.ctx.searchIndex.prepare(teamId, [datasetId], model))[0]?.entry;
  expect([...entry!.owners].filter(([, owner]) => owner === dataId).map(([id]) => id).sort()).toEqual(ids);
  expect(entry!.items.get(dataId)?.q).toBe(item.q);
  return item;
}

/** Whether an embedding search for `text` finds the item by a vector close to that text. */
async function foundByVector(datasetId: string, dataId: string, text: string): Promise<boolean> {
  const result = await api.ok<{ list: { id: string }[] }>(api.post('/core/dataset/searchTest', { datasetId, text, searchMode: 'embedding', similarity: 0.9 }));
  return result.list.some((hit) => hit.id === dataId);
}

describe('racing writers of one data item', () => {
  it('concurrent updates each adding an index: the last writer of a serial order wins, losers get 409, no vector is orphaned', async () => {
    const { datasetId, dataId } = await newItem('Raced updates', 'Base item about the harbour.', 'local-lexical-v1');
    const [base] = (await detail(dataId)).indexes;
    const extras = ['alpha glacier moraine', 'bravo lantern signal', 'charlie orchard frost', 'delta copper kettle', 'echo violin workshop', 'foxtrot desert caravan'];
    const answers = await Promise.all(extras.map((text) => api.post('/core/dataset/data/update', { dataId, indexes: [base, { text }] })));
    for (const answer of answers) expect([200, 409]).toContain(answer.status);
    const conflicts = answers.filter((answer) => answer.status === 409);
    for (const answer of conflicts) expect(answer.body).toMatchObject({ code: 409, statusText: 'conflict' });
    expect(conflicts.length).toBeLessThan(extras.length);

    // Each update names the base index and its own text, so any serial order ends with the last one's.
    const item = await expectIndexedAsStored(datasetId, dataId, 'local-lexical-v1');
    const kept = extras.filter((text) => item.indexes.some((index) => index.text === text));
    expect(kept).toHaveLength(1);
    expect(answers[extras.indexOf(kept[0]!)]!.status).toBe(200);
    expect(texts(item)).toEqual([base!.text, kept[0]!].sort());
    for (const text of extras) expect(await foundByVector(datasetId, dataId, text)).toBe(text === kept[0]);
  });

  it('an update that loses to another write at every try answers 409 and changes nothing', async () => {
    const { datasetId, dataId } = await newItem('Always raced', 'Contended item about canals.', 'local-lexical-v1');
    const before = await detail(dataId);
    const { data } = t.app.datasets.ctx.repos;
    const update = data.update.bind(data);
    // Another writer lands between every read and write of this update.
    const spy = vi.spyOn(data, 'update').mockImplementation(async (...args) => {
      await t.app.mongo.db.collection('dataset_datas').updateOne({ _id: new ObjectId(dataId) }, { $inc: { version: 1 } });
      return update(...args);
    });
    try {
      const answer = await api.post('/core/dataset/data/update', { dataId, indexes: [before.indexes[0], { text: 'india canal lock keeper' }] });
      expect(answer.status).toBe(409);
      expect(answer.body).toMatchObject({ code: 409, statusText: 'conflict' });
      expect(answer.body.message).toContain('retry');
      expect(spy.mock.calls.length).toBeGreaterThan(1);
    } finally {
      spy.mockRestore();
    }
    expect(texts(await expectIndexedAsStored(datasetId, dataId, 'local-lexical-v1'))).toEqual(texts(before));
    expect(await foundByVector(datasetId, dataId, 'india canal lock keeper')).toBe(false);
  });

  it('an update answering 409 bills none of the embeddings its tries made; the same update landing bills them once', async () => {
    const { dataId } = await newItem('Unbilled conflicts', 'Billed item about ferries.', 'fake-embed');
    const before = await detail(dataId);
    const billed = async () => {
      await t.app.identity.usage.drain();
      return t.app.mongo.db.collection('usages').find({ teamId: new ObjectId(teamId), appName: 'Data index' }).toArray();
    };
    const atStart = (await billed()).length;
    const { data } = t.app.datasets.ctx.repos;
    const update = data.update.bind(data);
    const spy = vi.spyOn(data, 'update').mockImplementation(async (...args) => {
      await t.app.mongo.db.collection('dataset_datas').updateOne({ _id: new ObjectId(dataId) }, { $inc: { version: 1 } });
      return update(...args);
    });
    const indexes = [before.indexes[0], { text: 'juliet ferry timetable' }];
    try {
      expect((await api.post('/core/dataset/data/update', { dataId, indexes })).status).toBe(409);
    } finally {
      spy.mockRestore();
    }
    expect(await billed()).toHaveLength(atStart);
    await api.ok(api.post('/core/dataset/data/update', { dataId, indexes }));
    const records = await billed();
    expect(records).toHaveLength(atStart + 1);
    expect(records.at(-1)!.list).toEqual([expect.objectContaining({ moduleName: 'Embeddings', model: 'Fake embed' })]);
  });

  it('an update of q racing an update adding an index: never the old q with the new index', async () => {
    const { datasetId, dataId } = await newItem('Raced q', 'Old question about ferries.', 'local-lexical-v1');
    const [base] = (await detail(dataId)).indexes;
    const newQ = 'New question about lighthouses.';
    const added = 'golf mountain railway';
    const [edit, addition] = await Promise.all([
      api.post('/core/dataset/data/update', { dataId, q: newQ }),
      api.post('/core/dataset/data/update', { dataId, indexes: [base, { text: added }] }),
    ]);
    expect([edit.status, addition.status]).toEqual([200, 200]);
    const item = await expectIndexedAsStored(datasetId, dataId, 'local-lexical-v1');
    // The edit first: the addition keeps its q and sets the indexes it names (the old default
    // text is no longer the default, so it stays as an index of its own). The addition first: the
    // edit (which names no index) leaves only the default index of its q.
    expect(item.q).toBe(newQ);
    expect([[newQ, base!.text, added].sort(), [newQ]]).toContainEqual(texts(item));
    expect(await foundByVector(datasetId, dataId, added)).toBe(item.indexes.length > 1);
  });

  it('an update landing while a rebuild embeds the item: the rebuild plans again, the update is kept', async () => {
    const q = 'Rebuild race item about tide tables.';
    const { datasetId, dataId } = await newItem('Raced rebuild', q, 'local-lexical-v1');
    const seen = new Promise<void>((resolve) => {
      gateSeen = resolve;
    });
    let open: () => void = () => undefined;
    gatedText = q;
    gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    try {
      expect(await api.ok(api.post('/core/dataset/training/rebuildEmbedding', { datasetId, vectorModel: 'fake-embed' }))).toEqual({});
      const draining = t.app.datasets.trainingWorker.drain();
      await seen;
      // The worker planned from the item and waits for its vectors: an update lands meanwhile.
      const [base] = (await detail(dataId)).indexes;
      const added = 'hotel harbour cranes';
      await api.ok(api.post('/core/dataset/data/update', { dataId, indexes: [base, { text: added }] }));
      open();
      gate = undefined;
      await draining;
      const item = await expectIndexedAsStored(datasetId, dataId, 'fake-embed');
      expect(texts(item)).toEqual([q, added].sort());
      expect(await foundByVector(datasetId, dataId, added)).toBe(true);
      const queue = await api.ok<{ trainingCount: number; rebuildingCount: number }>(api.get('/core/dataset/training/getDatasetTrainingQueue', { datasetId }));
      expect(queue).toMatchObject({ trainingCount: 0, rebuildingCount: 0 });
    } finally {
      open();
      gate = undefined;
    }
  });
});

// Only insertData's q + a was checked: a longer custom index, or an update's new texts, went to
// the provider, whose refusal came back as a 502 after the request was accepted.
describe('texts longer than the vector model takes (3,000 tokens here)', () => {
  it('are a 400 naming the field, before any embedding or write, on insertData and update', async () => {
    const { dataId } = await newItem('Too long', 'A short item about ferries.', 'fake-embed');
    const collectionId = String((await t.app.mongo.db.collection('dataset_datas').findOne({ _id: new ObjectId(dataId) }))!.collectionId);
    const before = await detail(dataId);
    const long = 'harbour ferry timetable '.repeat(1_000);
    const calls = provider.requests.length;
    for (const [url, body, field] of [
      ['/core/dataset/data/insertData', { collectionId, q: 'A second item.', indexes: [{ text: long }] }, 'indexes'],
      ['/core/dataset/data/update', { dataId, q: long }, 'q'],
      ['/core/dataset/data/update', { dataId, a: long }, 'q'],
      ['/core/dataset/data/update', { dataId, indexes: [...before.indexes, { text: long }] }, 'indexes'],
    ] as const) {
      const answer = await api.post(url, body);
      expect(answer.status, url).toBe(400);
      expect(answer.body.message).toContain(`Invalid field '${field}'`);
    }
    expect(provider.requests.length).toBe(calls);
    expect(await detail(dataId)).toEqual(before);
    expect(await t.app.mongo.db.collection('dataset_datas').countDocuments({ collectionId: new ObjectId(collectionId) })).toBe(1);
  });
});
