/**
 * Two processes must never both do the work one of the datasets' locks serialises: a holder that
 * stalled past its lease (and whose lock another process took over) stops before its next write,
 * leaving what a retry or the new holder finishes. Covers the dataset and collection trees and
 * link syncs, the training counts' base, and index writes (which must not write, log, repair or release
 * the lost lock then, but take it anew to repair what they had sent, which may have landed after the new holder's repair).
 */
import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type AcquireOptions, createMongoLocks, type HeldLock, LOCKS_COLLECTION } from '../../src/infra/mongo-lock.js';
import type { AuthContext } from '../../src/platform/auth/types.js';
import { createCollectionImportService } from '../../src/platform/datasets/collections/collection-import.service.js';
import { createCollectionService } from '../../src/platform/datasets/collections/collection.service.js';
import type { DatasetsContext } from '../../src/platform/datasets/context.js';
import { createDataService } from '../../src/platform/datasets/data/data.service.js';
import { createDatasetService } from '../../src/platform/datasets/datasets/dataset.service.js';
import { type IndexWriteIntent, repairAbandonedIndexWrites, withIndexWrite } from '../../src/platform/datasets/search/index-writes.js';
import { createTrainingCounts } from '../../src/platform/datasets/training/training-counts.js';
import { type Client, client } from '../fixtures/datasets/client.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';
import { type LocalSite, startLocalSite } from '../helpers/local-site.js';
import { expectStopped, type HeldBy, stallingContext as stallingContextOf, stallingOnce, stallingRepository, stallPastLease as stallPastLeaseOf } from '../helpers/lock-loss.js';

let t: TestApp;
let api: Client;
let teamId: string;
let auth: AuthContext;
let site: LocalSite;
let siteUrl: string;
let page = '';

beforeAll(async () => {
  site = await startLocalSite((_req, res) => {
    res.setHeader('content-type', 'text/html');
    res.end(page);
  });
  siteUrl = site.url;
  t = await buildTestApp({ SSRF_ALLOW_PRIVATE: 'true' });
  const user = await createUser(t, { username: 'dataset-lock-loss', password: 'password-1' });
  teamId = user.teamId;
  auth = { ...(await t.app.identity.memberContext(user.tmbId))!, authType: 'token' };
  api = client(t, await login(t, 'dataset-lock-loss', 'password-1'));
});
afterAll(async () => {
  await t?.close();
  await site?.close();
});

const db = () => t.app.mongo.db;
const collectionIds = async (filter: Record<string, unknown>) => (await db().collection('dataset_collections').find(filter).toArray()).map((doc) => String(doc._id));

/** stallingContext of the lock helpers, on this test's app. */
const stallingContext = (held: HeldBy, change: (ctx: DatasetsContext) => Partial<DatasetsContext>) => stallingContextOf(t.app.datasets.ctx, held, change);

/** stallPastLease of the lock helpers, on this test's database. */
const stallPastLease = (key: string, held: HeldBy, other: () => Promise<unknown>, locks = LOCKS_COLLECTION) => stallPastLeaseOf(db(), key, held, other, locks);

describe('dataset and collection trees under a lost lock', () => {
  it('a dataset create stops before inserting into a folder the new holder deleted', async () => {
    const folderId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Going', type: 'folder' }));
    const held: HeldBy = {};
    const service = createDatasetService(
      stallingContext(
        held,
        stallingRepository('datasets', 'findById', () => stallPastLease(`datasets:${teamId}`, held, () => api.ok(api.del('/core/dataset/delete', { id: folderId })))),
      ),
    );
    await expectStopped(() => service.create(auth, { name: 'Late', parentId: folderId }));
    expect(await db().collection('datasets').countDocuments({ parentId: new ObjectId(folderId) })).toBe(0);
  });

  it('a collection create stops before inserting into a folder the new holder deleted', async () => {
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Create into a folder' }));
    const folderId = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'Going', type: 'folder' }));
    const held: HeldBy = {};
    const importer = createCollectionImportService(
      stallingContext(
        held,
        stallingRepository('collections', 'findById', () =>
          stallPastLease(`dataset_collections:${datasetId}`, held, () => api.ok(api.del('/core/dataset/collection/delete', { id: folderId }))),
        ),
      ),
    );
    await expectStopped(() => importer.insertInTree(auth, { datasetId, parentId: folderId, name: 'Late', type: 'virtual', trainingType: 'chunk', chunkSize: 512 }));
    expect(await collectionIds({ datasetId: new ObjectId(datasetId) })).toEqual([]);
  });

  it('a folder delete stops before the collections go, keeping one the new holder created into it; a retry deletes all', async () => {
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Delete a folder' }));
    const folderId = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'Folder', type: 'folder' }));
    await api.ok(api.post('/core/dataset/collection/create', { datasetId, parentId: folderId, name: 'Inside', type: 'virtual' }));
    let created = '';
    const held: HeldBy = {};
    // The last step before the collections go.
    const ctx = stallingContext(
      held,
      stallingRepository('files', 'deleteImagesRelated', () =>
        stallPastLease(`dataset_collections:${datasetId}`, held, async () => {
          created = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, parentId: folderId, name: 'Created meanwhile', type: 'virtual' }));
        }),
      ),
    );
    const service = createCollectionService(ctx, createCollectionImportService(ctx));
    await expectStopped(() => service.remove(auth, folderId));
    expect(await collectionIds({ _id: new ObjectId(folderId) })).toEqual([folderId]);
    expect(await collectionIds({ parentId: new ObjectId(folderId) })).toContain(created);
    await api.ok(api.del('/core/dataset/collection/delete', { id: folderId }));
    expect(await collectionIds({ datasetId: new ObjectId(datasetId) })).toEqual([]);
  });

  it('a link sync that lost the lock during its checks imports no second replacement', async () => {
    page = '<html><body><main><p>Version one of the synced page.</p></main></body></html>';
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Synced' }));
    const old = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'page', type: 'link', rawLink: `${siteUrl}/page` }));
    const held: HeldBy = {};
    const ctx = stallingContext(held, (ctx) => ({
      teamLimits: {
        ...ctx.teamLimits,
        // The checks' scan of the dataset's size, after which the other process syncs.
        assertDatasetSize: stallingOnce(ctx.teamLimits.assertDatasetSize, () =>
          stallPastLease(`dataset_link_sync:${old}`, held, () => api.ok(api.post('/core/dataset/collection/sync/link', { collectionId: old }))),
        ),
      },
    }));
    const service = createCollectionService(ctx, createCollectionImportService(ctx));
    await expectStopped(() => service.syncLink(auth, old));
    expect(await collectionIds({ datasetId: new ObjectId(datasetId) })).toHaveLength(1);
    expect(await collectionIds({ _id: new ObjectId(old) })).toEqual([]);
  });
});

describe('training counts under a lost lock', () => {
  it("a recount that outlasted its lease writes no base over the new holder's", async () => {
    const datasetId = new ObjectId().toHexString();
    const counted = (n: number) => async () => [{ c: 'collection', m: 'embed.v1', n }];
    const other = createTrainingCounts(db(), { recount: counted(7) });
    const failures: unknown[] = [];
    let stalled = false;
    const holder = createTrainingCounts(db(), {
      async recount() {
        if (stalled) return counted(3)();
        stalled = true;
        // The queue held 3 when this scan began; it is slow, and the other process counts 7 meanwhile.
        await db().collection<{ _id: string; expiresAt: Date }>(LOCKS_COLLECTION).updateOne({ _id: `dataset_training_counts:${datasetId}` }, { $set: { expiresAt: new Date(0) } });
        expect(await other.read(teamId, datasetId)).toEqual(new Map([['collection', 7]]));
        // The holder's next renewal matches nothing, so it stops renewing: one interval fewer.
        const renewing = vi.getTimerCount();
        await vi.advanceTimersByTimeAsync(5_000);
        await vi.waitFor(() => expect(vi.getTimerCount()).toBe(renewing - 1));
        return counted(3)();
      },
      onError: (error) => failures.push(error),
    });
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      // The read still answers, from a count of its own.
      expect(await holder.read(teamId, datasetId)).toEqual(new Map([['collection', 3]]));
    } finally {
      vi.useRealTimers();
    }
    expect(failures).toEqual([expect.objectContaining({ name: 'LockLostError' })]);
    expect(await other.read(teamId, datasetId)).toEqual(new Map([['collection', 7]]));
  });
});

describe('index writes under a lost lock', () => {
  /**
   * A dataset with one item, and the context of a writer counting its repair steps and releases.
   * `stall(repaired)`: the writer stalls past its lease; the other process, the sweep, takes the
   * lock, repairs `repaired` intents and releases it. `stallOnAcquire`: stall once the lock is taken.
   */
  async function setup(stallOnAcquire?: number) {
    const held: HeldBy = {};
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Indexed' }));
    const collectionId = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'c', type: 'virtual' }));
    const dataId = await api.ok<string>(api.post('/core/dataset/data/insertData', { collectionId, q: 'An item whose index write stalls.' }));
    const sweep = async (repaired: number) => expect(await repairAbandonedIndexWrites(t.app.datasets.ctx)).toBe(repaired);
    const stall = (repaired: number) => stallPastLease(datasetId, held, () => sweep(repaired), 'dataset_index_writes');
    const counted = { repairSteps: 0, releases: 0 };
    const ctx = t.app.datasets.ctx;
    const { indexWrites, datasets } = ctx.repos;
    const acquire = async (key: string, options?: AcquireOptions<IndexWriteIntent>): Promise<HeldLock<IndexWriteIntent>> => {
      const lock = await indexWrites.acquire<IndexWriteIntent>(key, options);
      held.lock = lock;
      if (stallOnAcquire !== undefined) await stall(stallOnAcquire);
      return {
        ...lock,
        release: () => {
          counted.releases += 1;
          return lock.release();
        },
      };
    };
    const writer: DatasetsContext = {
      ...ctx,
      repos: {
        ...ctx.repos,
        indexWrites: { ...indexWrites, acquire: acquire as typeof indexWrites.acquire },
        datasets: {
          ...datasets,
          // A repair's checks of the dataset.
          existingIds: (ids) => {
            counted.repairSteps += 1;
            return datasets.existingIds(ids);
          },
        },
      },
    };
    return { datasetId, dataId, ctx: writer, intent: { teamId, items: [dataId] }, counted, held, stall };
  }

  it('a writer that stalled before its write writes nothing, and leaves the repair of its intent to the new holder', async () => {
    const { datasetId, ctx, intent, counted } = await setup(1);
    let wrote = false;
    await expectStopped(() =>
      withIndexWrite(ctx, datasetId, intent, async () => {
        wrote = true;
      }),
    );
    expect([wrote, counted]).toEqual([false, { repairSteps: 0, releases: 0 }]);
  });

  it('a writer whose intent could not be stored (the lock taken over) does not write', async () => {
    const { datasetId, ctx, intent, counted, stall } = await setup();
    let wrote = false;
    await expectStopped(() =>
      withIndexWrite(ctx, datasetId, undefined, async (_ctx, intend) => {
        await stall(0);
        await intend(intent);
        wrote = true;
      }),
    );
    expect([wrote, counted]).toEqual([false, { repairSteps: 0, releases: 0 }]);
  });

  it("a writer that stalled between its write and its log does not log over the new holder's delete (and repairs anew once it stopped)", async () => {
    const { datasetId, dataId, ctx, counted, held } = await setup();
    const found = async (text: string) =>
      (await api.ok<{ list: { q: string }[] }>(api.post('/core/dataset/searchTest', { datasetId, text, searchMode: 'fullTextRecall' }))).list.map((item) => item.q);
    // Searched once, so this process keeps the index open and applies the log (an index opened later is built from MongoDB).
    expect(await found('index write stalls')).toEqual(['An item whose index write stalls.']);
    const { data } = ctx.repos;
    // The update's write lands; then the writer stalls, and the other process repairs its intent and deletes the item.
    const update = stallingOnce(data.update, () => stallPastLease(datasetId, held, () => api.ok(api.del('/core/dataset/data/delete', { id: dataId })), 'dataset_index_writes'));
    const service = createDataService({ ...ctx, repos: { ...ctx.repos, data: { ...data, update } } });
    await expectStopped(() => service.update(auth, { dataId, q: 'Updated by a writer that stalled: the lighthouse keeper rota.' }));
    expect(await db().collection('dataset_datas').countDocuments({ _id: new ObjectId(dataId) })).toBe(0);
    expect([await found('lighthouse keeper rota'), await found('index write stalls')]).toEqual([[], []]);
    // Its repair under the lock taken anew found the item gone.
    expect(counted).toEqual({ repairSteps: 1, releases: 1 });
  });

  it("a writer whose item write was held up past the new holder's repair logs it once stopped, under the lock taken anew", async () => {
    const { datasetId, dataId, ctx, counted, held } = await setup();
    const found = async (text: string) =>
      (await api.ok<{ list: { q: string }[] }>(api.post('/core/dataset/searchTest', { datasetId, text, searchMode: 'fullTextRecall' }))).list.map((item) => item.q);
    // Searched once, so this process keeps the index open and applies the log (an index opened later is built from MongoDB).
    expect(await found('index write stalls')).toEqual(['An item whose index write stalls.']);
    const { data } = ctx.repos;
    let stalled = false;
    // The update's write is sent, then held up: another writer takes the lock, repairs the intent (the old text) and releases; then the write lands.
    const update: typeof data.update = async (...args) => {
      if (!stalled) {
        stalled = true;
        await stallPastLease(datasetId, held, () => withIndexWrite(t.app.datasets.ctx, datasetId, undefined, async () => undefined), 'dataset_index_writes');
      }
      return data.update(...args);
    };
    const service = createDataService({ ...ctx, repos: { ...ctx.repos, data: { ...data, update } } });
    await expectStopped(() => service.update(auth, { dataId, q: 'Landed late: the harbour pilot timetable.' }));
    expect(await found('harbour pilot timetable')).toEqual(['Landed late: the harbour pilot timetable.']);
    expect(await found('index write stalls')).toEqual([]);
    expect(counted).toEqual({ repairSteps: 2, releases: 1 });
    expect(await db().collection('dataset_index_writes').countDocuments({ _id: datasetId as never })).toBe(0);
  });

  it('a writer whose renewals stopped going through takes its own lock over once it lapsed and repairs its late write once', async () => {
    const { datasetId, dataId, ctx, counted } = await setup();
    const found = async (text: string) =>
      (await api.ok<{ list: { q: string }[] }>(api.post('/core/dataset/searchTest', { datasetId, text, searchMode: 'fullTextRecall' }))).list.map((item) => item.q);
    expect(await found('index write stalls')).toEqual(['An item whose index write stalls.']);
    let elapsed = 0;
    const { data } = ctx.repos;
    let stalled = false;
    // The update's write is held up for 10 s (no renewal goes through meanwhile), and its lock lapses with nobody taking it; then the write lands.
    const update: typeof data.update = async (...args) => {
      if (!stalled) {
        stalled = true;
        elapsed += 10_000;
        await db().collection<{ _id: string; expiresAt: Date }>('dataset_index_writes').updateOne({ _id: datasetId }, { $set: { expiresAt: new Date(0) } });
      }
      return data.update(...args);
    };
    const indexWrites = createMongoLocks(db(), { collection: 'dataset_index_writes', monotonic: () => elapsed });
    const service = createDataService({ ...ctx, repos: { ...ctx.repos, indexWrites, data: { ...data, update } } });
    await expect(service.update(auth, { dataId, q: 'Landed late: the ferry crossing roster.' })).rejects.toMatchObject({ message: expect.stringMatching(/no renewal went through/) });
    expect(await found('ferry crossing roster')).toEqual(['Landed late: the ferry crossing roster.']);
    // Its intent, stored in its own lock, came back as `left`: repaired once (two checks of the item's dataset and collection), not twice.
    expect(counted.repairSteps).toBe(2);
    expect(await db().collection('dataset_index_writes').countDocuments({ _id: datasetId as never })).toBe(0);
  });

  it('a writer that stalled between two of its writes makes no second one (the new holder repaired the first)', async () => {
    const { dataId, ctx, counted, stall } = await setup();
    const { searchIndex } = ctx;
    // The update's new vectors are stored and logged; then the writer stalls, and the sweep repairs its intent (removing them, as no item points to them).
    const service = createDataService({ ...ctx, searchIndex: { ...searchIndex, addVectors: stallingOnce(searchIndex.addVectors, () => stall(1)) } });
    await expectStopped(() => service.update(auth, { dataId, q: 'Never written: the item would point to vectors the repair removed.' }));
    const item = (await db().collection('dataset_datas').findOne({ _id: new ObjectId(dataId) }))!;
    const vectorIds = (item.indexes as { dataId: ObjectId }[]).map((index) => index.dataId);
    expect([item.q, await db().collection('dataset_vectors').countDocuments({ _id: { $in: vectorIds } })]).toEqual(['An item whose index write stalls.', 1]);
    // It repaired its intent again under the lock taken anew (its stored vectors may have landed after the sweep).
    expect(counted).toEqual({ repairSteps: 2, releases: 1 });
  });

  it('a writer that failed after losing the lock neither repairs nor releases', async () => {
    const { datasetId, ctx, intent, counted, stall } = await setup();
    await expectStopped(
      () =>
        withIndexWrite(ctx, datasetId, intent, async () => {
          await stall(1);
          throw new Error('the database went away');
        }),
      { message: 'the database went away' },
    );
    expect(counted).toEqual({ repairSteps: 0, releases: 0 });
  });
});
