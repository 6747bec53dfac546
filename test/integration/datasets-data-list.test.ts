import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATA_CHANGES_KEPT_MS, dataListStampKey } from '../../src/platform/datasets/data/data-list.read-model.js';
import { type Client, client } from '../fixtures/datasets/client.js';
import { buildReplica, buildTestApp, type TestApp } from '../helpers/app.js';
import { commandsDuring, findFiltersDuring } from '../helpers/command-counter.js';
import { createUser, login } from '../helpers/platform.js';

/**
 * The data list of a collection is kept per process (data-list.read-model.ts) under the
 * collection's stamp. Processes a and b keep every list; c keeps only collections of at most two
 * items, so for larger ones it answers from the database query the kept lists replace. Every
 * write that changes a list is seen by the next page on every process, and kept pages equal the
 * database's pages.
 */

let a: TestApp;
let b: TestApp;
let c: TestApp;
let teamId: string;
let otherTeamId: string;
const on = {} as Record<'a' | 'b' | 'c', Client>;
let other: Client;
const LATER = (minutes: number) => new Date(Date.now() + minutes * 60_000);

beforeAll(async () => {
  const dir = await mkdtemp(join(tmpdir(), 'data-list-'));
  const configPath = join(dir, 'config.json');
  const lexical = { provider: 'local-lexical', defaultToken: 512, maxToken: 3000, weight: 100 };
  await writeFile(configPath, JSON.stringify({ vectorModels: [{ ...lexical, model: 'local-lexical-v1', name: 'Lexical' }, { ...lexical, model: 'lexical-b', name: 'Lexical B' }] }));
  const env = { MODEL_CONFIG_PATH: configPath, TRAINING_WORKER: 'false' };
  a = await buildTestApp(env);
  b = await buildReplica(a, env);
  c = await buildReplica(a, { ...env, DATA_LIST_CACHE_ITEMS: '2' });
  const owner = await createUser(a, { username: 'dl-boss', password: 'password-1' });
  teamId = owner.teamId;
  otherTeamId = (await createUser(a, { username: 'dl-other', password: 'password-1' })).teamId;
  const token = await login(a, 'dl-boss', 'password-1');
  on.a = client(a, token);
  on.b = client(b, token);
  on.c = client(c, token);
  other = client(a, await login(a, 'dl-other', 'password-1'));
});

afterAll(async () => {
  await c?.close();
  await b?.close();
  await a?.close();
});

const api = () => on.a;
type Row = { _id: string; datasetId: string; collectionId: string; q: string; a: string; chunkIndex: number };
type Page = { list: Row[]; total: number };
const page = (x: Client, collectionId: string, body: Record<string, unknown> = {}) => x.ok<Page>(x.post('/core/dataset/data/v2/list', { collectionId, pageSize: 100, ...body }));

async function fixture() {
  const datasetId = await api().ok<string>(api().post('/core/dataset/create', { name: `data list ${new ObjectId().toHexString()}` }));
  const collectionId = await api().ok<string>(api().post('/core/dataset/collection/create', { datasetId, name: 'c', type: 'virtual' }));
  return { datasetId, collectionId };
}

/** The list's q values on every process; a and b are read before each write, so a missed bump would show. */
async function qs(collectionId: string) {
  const pages = await Promise.all((['a', 'b', 'c'] as const).map((name) => page(on[name], collectionId)));
  expect(pages[1], 'process b').toEqual(pages[0]);
  expect(pages[2], 'process c').toEqual(pages[0]);
  expect(pages[0]!.total).toBe(pages[0]!.list.length);
  return pages[0]!.list.map((row) => row.q);
}

describe('kept data lists', () => {
  it('every write that changes a list is seen by the next page on every process', async () => {
    const { datasetId, collectionId } = await fixture();
    expect(await qs(collectionId)).toEqual([]);
    const insert = (q: string) => api().ok<string>(api().post('/core/dataset/data/insertData', { collectionId, q, a: `answer to ${q}` }));
    const first = await insert('first');
    expect(await qs(collectionId)).toEqual(['first']);
    await insert('second');
    // Items inserted one by one share chunkIndex 0: the newest update comes first.
    expect(await qs(collectionId)).toEqual(['second', 'first']);
    await insert('third');
    expect(await qs(collectionId)).toEqual(['third', 'second', 'first']);

    await api().ok(api().post('/core/dataset/data/pushData', { collectionId, data: [{ q: 'pushed one', chunkIndex: 1 }, { q: 'pushed two', chunkIndex: 2 }] }));
    expect(await qs(collectionId), 'queued items are not listed yet').toEqual(['third', 'second', 'first']);
    await a.app.datasets.trainingWorker.drain();
    expect(await qs(collectionId)).toEqual(['third', 'second', 'first', 'pushed one', 'pushed two']);

    await api().ok(api().put('/core/dataset/data/update', { dataId: first, q: 'first, edited' }));
    expect(await qs(collectionId)).toEqual(['first, edited', 'third', 'second', 'pushed one', 'pushed two']);
    expect((await page(on.b, collectionId)).list[0]).toMatchObject({ _id: first, a: 'answer to first', datasetId, collectionId, chunkIndex: 0 });

    const second = (await page(on.b, collectionId)).list.find((row) => row.q === 'second')!;
    await api().ok(api().del('/core/dataset/data/delete', { id: second._id }));
    expect(await qs(collectionId)).toEqual(['first, edited', 'third', 'pushed one', 'pushed two']);

    // A rebuild re-embeds each item and moves its updateTime, so the order of equal chunkIndexes
    // may change (here it happens not to): the claims and the re-pointed items both bump.
    const stamp = async () => (await a.app.mongo.db.collection<{ _id: string; value: string }>('version_stamps').findOne({ _id: dataListStampKey(collectionId) }))?.value;
    const beforeRebuild = await stamp();
    await api().ok(api().post('/core/dataset/training/rebuildEmbedding', { datasetId, vectorModel: 'lexical-b' }));
    const claimed = await stamp();
    expect(claimed, 'the claims bumped').not.toBe(beforeRebuild);
    await a.app.datasets.trainingWorker.drain(LATER(60));
    expect(await stamp(), 'the re-pointed items bumped').not.toBe(claimed);
    expect((await qs(collectionId)).sort()).toEqual(['first, edited', 'pushed one', 'pushed two', 'third']);

    // The cascades' and the deleted-owner sweeps' removal of a collection's items.
    await a.app.datasets.ctx.repos.data.deleteByCollections(teamId, [collectionId]);
    expect(await qs(collectionId)).toEqual([]);
  });

  it('after a write naming a few items, a kept list on another process reads only those again', async () => {
    const { collectionId } = await fixture();
    const insert = (q: string) => api().ok<string>(api().post('/core/dataset/data/insertData', { collectionId, q }));
    const ids = [await insert('one'), await insert('two'), await insert('three')];
    expect((await page(on.b, collectionId)).total).toBe(3);
    const readsOnB = async () => {
      let listed: Page | undefined;
      const filters = await findFiltersDuring(b.app, 'dataset_datas', async () => {
        listed = await page(on.b, collectionId);
      });
      return { filters: filters.map((filter) => Object.keys(filter).sort().join(',')), qs: listed?.list.map((row) => row.q) };
    };
    const byId = '_id,teamId';
    await api().ok(api().put('/core/dataset/data/update', { dataId: ids[0]!, q: 'one, edited' }));
    expect(await readsOnB()).toEqual({ filters: [byId], qs: ['one, edited', 'three', 'two'] });
    await api().ok(api().del('/core/dataset/data/delete', { id: ids[1]! }));
    expect(await readsOnB()).toEqual({ filters: [byId], qs: ['one, edited', 'three'] });
    await insert('four');
    expect(await readsOnB()).toEqual({ filters: [byId], qs: ['four', 'one, edited', 'three'] });
    // A batch of more items than a refresh reads one by one: the collection is read again.
    await api().ok(api().post('/core/dataset/data/pushData', { collectionId, data: Array.from({ length: 17 }, (_, i) => ({ q: `pushed ${i}`, chunkIndex: i + 1 })) }));
    await a.app.datasets.trainingWorker.drain();
    const afterBatch = await readsOnB();
    expect(afterBatch.filters).toEqual(['collectionId,datasetId,teamId']);
    expect(afterBatch.qs).toHaveLength(20);
  });

  it('writes racing on two processes while both keep the list leave it equal to the database page', async () => {
    const { collectionId } = await fixture();
    const writers = [on.a, on.b];
    const live: string[] = [];
    let step = 0;
    // Each round: both processes write at once (inserts, edits and deletes of a few items), then
    // every process pages the list, a and b from their kept copies, c from the database.
    for (let round = 0; round < 8; round++) {
      await Promise.all(
        writers.map(async (writer, w) => {
          for (let k = 0; k < 3; k++) {
            step += 1;
            const mine = live.filter((_, i) => i % 2 === w);
            if (step % 3 === 0 && mine.length > 1) {
              const id = mine[0]!;
              live.splice(live.indexOf(id), 1);
              await writer.ok(writer.del('/core/dataset/data/delete', { id }));
            } else if (step % 3 === 1 && mine.length > 0) {
              await writer.ok(writer.put('/core/dataset/data/update', { dataId: mine.at(-1)!, q: `edited at step ${step}` }));
            } else {
              live.push(await writer.ok<string>(writer.post('/core/dataset/data/insertData', { collectionId, q: `inserted at step ${step}`, chunkIndex: step % 4 })));
            }
          }
        }),
      );
      const pages = await Promise.all((['a', 'b', 'c'] as const).map((name) => page(on[name], collectionId)));
      expect(pages[0], `round ${round}, process a`).toEqual(pages[2]);
      expect(pages[1], `round ${round}, process b`).toEqual(pages[2]);
      expect(pages[2]!.total).toBe(live.length);
    }
  });

  it('recorded changes are swept once older than a kept list can be, and a list kept before the sweep still takes in later writes', async () => {
    const { collectionId } = await fixture();
    const changes = a.app.mongo.db.collection('dataset_data_changes');
    await api().ok(api().post('/core/dataset/data/insertData', { collectionId, q: 'one' }));
    expect((await page(on.b, collectionId)).total).toBe(1);
    const mine = { collectionId: new ObjectId(collectionId) };
    expect(await changes.countDocuments(mine)).toBe(1);
    // Only what is older than the kept time goes.
    expect(await a.app.datasets.ctx.repos.dataChanges.sweep(new Date(Date.now() - DATA_CHANGES_KEPT_MS))).toBe(0);
    expect(await changes.countDocuments(mine)).toBe(1);
    await a.app.datasets.ctx.repos.dataChanges.sweep(new Date(Date.now() + 1000));
    expect(await changes.countDocuments(mine)).toBe(0);
    await api().ok(api().post('/core/dataset/data/insertData', { collectionId, q: 'two' }));
    expect((await page(on.b, collectionId)).list.map((row) => row.q)).toEqual(['two', 'one']);
  });

  it('a kept page equals the database page for every offset, size and search text', async () => {
    const { datasetId, collectionId } = await fixture();
    const texts = ['Alpha (one)', 'alpha two', 'BETA', 'beta.gamma', 'betaxgamma', 'Ünïcode Straße', 'star*', 'plain', 'x', 'y', 'z', 'end'];
    // One batch: equal updateTimes, so ties of chunkIndex fall to the id.
    await a.app.datasets.ctx.repos.data.insertNew(
      texts.map((q, i) => ({ _id: new ObjectId().toHexString(), teamId, tmbId: new ObjectId().toHexString(), datasetId, collectionId, q, a: i % 3 === 0 ? `answer ${q}` : '', chunkIndex: i % 4, indexes: [], fullTextTokens: [] })),
    );
    await a.app.datasets.ctx.repos.data.insertNew([{ _id: new ObjectId().toHexString(), teamId, tmbId: new ObjectId().toHexString(), datasetId, collectionId, q: 'later', a: 'ALPHA in the answer', chunkIndex: 1, indexes: [], fullTextTokens: [] }]);
    for (const searchText of [undefined, null, '', '  ', 'alpha', 'ALPHA', ' two', 'two ', 'beta.gamma', '(one)', 'star*', 'straße', 'nothing matches']) {
      for (const [offset, pageSize] of [[0, 5], [5, 5], [10, 5], [0, 30], [3, 1], [13, 2], [40, 5]] as const) {
        const body = { offset, pageSize, searchText };
        const kept = await page(on.a, collectionId, body);
        expect(kept, JSON.stringify(body)).toEqual(await page(on.c, collectionId, body));
      }
    }
    // The first API's pages (pageNum) too.
    const v1 = (x: Client) => x.ok(x.post('/core/dataset/data/list', { collectionId, pageNum: 2, pageSize: 4, searchText: 'a' }));
    expect(await v1(on.a)).toEqual(await v1(on.c));
    expect(((await page(on.a, collectionId, { searchText: 'alpha' })).list).map((row) => row.q)).toEqual(['Alpha (one)', 'later', 'alpha two']);
    // Matched as typed, as the reference: the space is part of the text; null is no search.
    expect(((await page(on.a, collectionId, { searchText: ' two' })).list).map((row) => row.q)).toEqual(['alpha two']);
    expect((await page(on.a, collectionId, { searchText: 'two ' })).total).toBe(0);
    expect((await page(on.a, collectionId, { searchText: null })).total).toBe(texts.length + 1);
  });

  it("another team's caller never sees a kept list", async () => {
    const { datasetId, collectionId } = await fixture();
    await api().ok(api().post('/core/dataset/data/insertData', { collectionId, q: 'secret' }));
    expect((await page(on.a, collectionId)).total).toBe(1);
    expect((await other.post('/core/dataset/data/v2/list', { collectionId })).status).toBe(403);
    // Below authorisation too: a view is kept per team, so another team's key loads its own (empty) view.
    expect(await a.app.datasets.ctx.dataList.page(otherTeamId, { _id: collectionId, datasetId }, { skip: 0, limit: 10 })).toEqual({ items: [], total: 0 });
  });

  it('a kept list costs its stamp; a collection over the limit is read from the database for each page', async () => {
    const small = await fixture();
    const large = await fixture();
    for (const q of ['one', 'two']) await api().ok(api().post('/core/dataset/data/insertData', { collectionId: small.collectionId, q }));
    for (const q of ['one', 'two', 'three']) await api().ok(api().post('/core/dataset/data/insertData', { collectionId: large.collectionId, q }));
    const cost = async (collectionId: string) => {
      await page(on.c, collectionId);
      const commands = await commandsDuring(c.app, () => page(on.c, collectionId));
      return commands.filter((command) => command.collection === 'dataset_datas' || command.key === dataListStampKey(collectionId)).map((command) => `${command.name} ${command.collection}`);
    };
    expect(await cost(small.collectionId)).toEqual(['find version_stamps']);
    // Found too large by the first page, it is paged by the database without reading its stamp.
    expect(await cost(large.collectionId)).toEqual(['find dataset_datas']);
    expect((await page(on.c, large.collectionId)).list.map((row) => row.q)).toEqual(['three', 'two', 'one']);
  });
});
