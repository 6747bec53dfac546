/**
 * More of dataset-lock-loss.test.ts: a holder of one of the datasets' locks that stalled past its
 * lease (another process took the lock over) stops before its next write, and nothing changes.
 * Covers the checks before a dataset create copies its folder's collaborators and before it inserts the dataset, before a dataset
 * delete records its deletion, before a collection move writes the new parent, and before the
 * training counts' fold deletes the deltas its base holds.
 */
import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createMongoLocks, type HeldLock, LOCKS_COLLECTION } from '../../src/infra/mongo-lock.js';
import type { AuthContext } from '../../src/platform/auth/types.js';
import { createCollectionImportService } from '../../src/platform/datasets/collections/collection-import.service.js';
import { createCollectionService } from '../../src/platform/datasets/collections/collection.service.js';
import type { DatasetsContext } from '../../src/platform/datasets/context.js';
import type { ResourceDoc } from '../../src/platform/permissions/index.js';
import { createDatasetService } from '../../src/platform/datasets/datasets/dataset.service.js';
import { createTrainingCounts } from '../../src/platform/datasets/training/training-counts.js';
import { type Client, client } from '../fixtures/datasets/client.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { expectStopped, type HeldBy, stallingContext as stallingContextOf, stallingOnce, stallingRepository, stallPastLease as stallPastLeaseOf } from '../helpers/lock-loss.js';
import { createUser, login } from '../helpers/platform.js';

let t: TestApp;
let api: Client;
let teamId: string;
let auth: AuthContext;
let ritaTmbId: string;

beforeAll(async () => {
  t = await buildTestApp();
  const user = await createUser(t, { username: 'dataset-lock-loss-more', password: 'password-1' });
  teamId = user.teamId;
  auth = { ...(await t.app.identity.memberContext(user.tmbId))!, authType: 'token' };
  api = client(t, await login(t, 'dataset-lock-loss-more', 'password-1'));
  ritaTmbId = (await createUser(t, { username: 'dataset-lock-loss-rita', password: 'password-1', teamId, role: 'member', permission: 4 })).tmbId;
});
afterAll(async () => {
  await t?.close();
});

const db = () => t.app.mongo.db;
const stallingContext = (held: HeldBy, change: (ctx: DatasetsContext) => Partial<DatasetsContext>) => stallingContextOf(t.app.datasets.ctx, held, change);
const stallPastLease = (key: string, held: HeldBy, other: () => Promise<unknown>) => stallPastLeaseOf(db(), key, held, other);
const datasetIds = async (filter: Record<string, unknown>) => (await db().collection('datasets').find({ teamId: new ObjectId(teamId), ...filter }).toArray()).map((doc) => String(doc._id));
/** The datasets Rita has a collaborator row on. */
const ritaRows = async () => (await db().collection('resource_permissions').find({ resourceType: 'dataset', tmbId: new ObjectId(ritaTmbId) }).toArray()).map((row) => String(row.resourceId));

describe('dataset and collection trees under a lost lock', () => {
  /**
   * A folder shared with Rita, and a dataset service whose create of a folder in it stalls past
   * its lease right after `step` (reading the shared folder's rows, Rita's among them, or copying
   * them to the new folder) while the new holder changes the shared folder's collaborators (`meanwhile`).
   */
  async function sharedFolderStallingCreate(name: string, step: 'initialFor' | 'writeCollaborators', meanwhile: (shared: ResourceDoc) => Promise<unknown>) {
    const sharedId = await api.ok<string>(api.post('/core/dataset/create', { name, type: 'folder' }));
    const { permissions } = t.app.datasets.ctx;
    const shared = async () => (await permissions.tree.findById(sharedId))!;
    await permissions.updateCollaborators(auth, await shared(), [ritaTmbId], 4);
    const held: HeldBy = {};
    const stall = () => stallPastLease(`datasets:${teamId}`, held, async () => meanwhile(await shared()));
    const service = createDatasetService(
      stallingContext(held, (ctx) => ({
        permissions: { ...ctx.permissions, [step]: stallingOnce((ctx.permissions[step] as (...args: unknown[]) => Promise<unknown>).bind(ctx.permissions), stall) },
      })),
    );
    return { sharedId, service };
  }

  it('a folder create into a shared folder stops before copying collaborators the new holder removed', async () => {
    const { permissions } = t.app.datasets.ctx;
    const { sharedId, service } = await sharedFolderStallingCreate('Shared', 'initialFor', (shared) => permissions.deleteCollaborator(auth, shared, ritaTmbId));
    await expectStopped(() => service.create(auth, { name: 'Copying', parentId: sharedId, type: 'folder' }));
    expect(await datasetIds({ name: 'Copying' })).toEqual([]);
    expect(await ritaRows()).toEqual([]);
    // A retry creates the folder with the shared folder's rows as they are now.
    await api.ok(api.post('/core/dataset/create', { name: 'Copying', parentId: sharedId, type: 'folder' }));
    expect(await datasetIds({ name: 'Copying', parentId: new ObjectId(sharedId) })).toHaveLength(1);
    expect(await ritaRows()).toEqual([]);
  });

  it('a folder create that stopped after copying rows the new holder then changed inserts no folder and takes its rows back', async () => {
    const { permissions } = t.app.datasets.ctx;
    const { sharedId, service } = await sharedFolderStallingCreate('Shared too', 'writeCollaborators', (shared) => permissions.updateCollaborators(auth, shared, [ritaTmbId], 6));
    await expectStopped(() => service.create(auth, { name: 'Raised meanwhile', parentId: sharedId, type: 'folder' }));
    expect(await datasetIds({ name: 'Raised meanwhile' })).toEqual([]);
    // Rita's rows are the shared folder's own, none of an id that names no dataset.
    expect(await ritaRows()).toEqual([sharedId]);
  });

  it('a folder delete that stalled after reading its subtree records no deletion and deletes nothing; a retry deletes the child the new holder created too', async () => {
    const folderId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Deleting', type: 'folder' }));
    const inside = await api.ok<string>(api.post('/core/dataset/create', { name: 'Inside', parentId: folderId }));
    let created = '';
    const held: HeldBy = {};
    const service = createDatasetService(
      stallingContext(
        held,
        // The subtree read; the new holder creates into it meanwhile, so the read is stale.
        stallingRepository('datasets', 'withDescendants', () =>
          stallPastLease(`datasets:${teamId}`, held, async () => {
            created = await api.ok<string>(api.post('/core/dataset/create', { name: 'Created meanwhile', parentId: folderId }));
          }),
        ),
      ),
    );
    await expectStopped(() => service.remove(auth, folderId));
    const subtree = [folderId, inside, created];
    expect(await db().collection('dataset_deletions').countDocuments({ datasetIds: { $in: subtree.map((id) => new ObjectId(id)) } })).toBe(0);
    expect((await datasetIds({ _id: { $in: subtree.map((id) => new ObjectId(id)) } })).sort()).toEqual([...subtree].sort());
    await api.ok(api.del('/core/dataset/delete', { id: folderId }));
    expect(await datasetIds({ _id: { $in: subtree.map((id) => new ObjectId(id)) } })).toEqual([]);
  });

  it('a collection move that stalled after checking its target does not move it under the folder the new holder deleted', async () => {
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Moving' }));
    const target = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'Target', type: 'folder' }));
    const moved = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'Moved', type: 'virtual' }));
    const held: HeldBy = {};
    const ctx = stallingContext(held, () => ({}));
    const importer = createCollectionImportService(ctx);
    const checkParent = stallingOnce(importer.checkParent, () =>
      stallPastLease(`dataset_collections:${datasetId}`, held, () => api.ok(api.del('/core/dataset/collection/delete', { id: target }))),
    );
    const service = createCollectionService(ctx, { ...importer, checkParent });
    await expectStopped(() => service.update(auth, { id: moved, parentId: target }));
    const collections = await db().collection('dataset_collections').find({ datasetId: new ObjectId(datasetId) }).toArray();
    expect(collections.map((doc) => [String(doc._id), doc.parentId])).toEqual([[moved, null]]);
    // A retry finds the target gone, and the collection stays at the root.
    expect((await api.put('/core/dataset/collection/update', { id: moved, parentId: target })).body).toMatchObject({ statusText: 'missingParams' });
    expect(await db().collection('dataset_collections').findOne({ _id: new ObjectId(moved) })).toMatchObject({ parentId: null });
  });
});

describe('training counts under a lost lock', () => {
  it("a fold that stalled after writing its base deletes none of the deltas it folded (they are the new holder's to delete)", async () => {
    const datasetId = new ObjectId().toHexString();
    const key = `dataset_training_counts:${datasetId}`;
    const counted = async () => [{ c: 'collection', m: 'embed.v1', n: 3 }];
    const other = createTrainingCounts(db(), { recount: counted });
    await other.record([{ teamId, datasetId, collectionId: 'collection', model: 'embed.v1', delta: 2 }]);
    await other.record([{ teamId, datasetId, collectionId: 'collection', model: 'embed.v1', delta: 1 }]);
    const deltas = { datasetId: new ObjectId(datasetId), _id: { $type: 'objectId' as const } };
    const counts = db().collection('dataset_training_counts');
    let newHolder: HeldLock<unknown> | undefined;
    const stall = async () => {
      // The base is written; the holder stalls, and another process takes the lock (it holds it still when the holder wakes).
      await db().collection<{ _id: string; expiresAt: Date }>(LOCKS_COLLECTION).updateOne({ _id: key }, { $set: { expiresAt: new Date(0) } });
      newHolder = await createMongoLocks(db()).acquire(key);
      // The holder's next renewal matches nothing, so it stops renewing: one interval fewer.
      const renewing = vi.getTimerCount();
      await vi.advanceTimersByTimeAsync(5_000);
      await vi.waitFor(() => expect(vi.getTimerCount()).toBe(renewing - 1));
    };
    const replaceOne = stallingOnce(counts.replaceOne.bind(counts) as (...args: unknown[]) => Promise<unknown>, stall);
    // The holder's database, whose counts collection stalls after its first replaceOne.
    const stalling = new Proxy(db(), {
      get: (target, prop) =>
        prop === 'collection'
          ? (name: string) => {
              const col = target.collection(name);
              return name === 'dataset_training_counts' ? new Proxy(col, { get: (c, p) => (p === 'replaceOne' ? replaceOne : Reflect.get(c, p, c)) }) : col;
            }
          : Reflect.get(target, prop, target),
    });
    const failures: unknown[] = [];
    const holder = createTrainingCounts(stalling, { recount: counted, onError: (error) => failures.push(error) });
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      // The first read counts the queue and folds both deltas into the base it writes.
      expect(await holder.read(teamId, datasetId)).toEqual(new Map([['collection', 3]]));
      await newHolder?.release();
    } finally {
      vi.useRealTimers();
    }
    expect(await counts.countDocuments(deltas)).toBe(2);
    expect(failures).toEqual([expect.objectContaining({ name: 'LockLostError' })]);
    // The base names them as folded: they count once.
    expect(await other.read(teamId, datasetId)).toEqual(new Map([['collection', 3]]));
    // A later recount (an hour on, the counts still showing items) deletes them.
    const later = createTrainingCounts(db(), { recount: counted, now: () => new Date(Date.now() + 2 * 60 * 60_000) });
    expect(await later.read(teamId, datasetId)).toEqual(new Map([['collection', 3]]));
    await later.settled();
    expect(await counts.countDocuments(deltas)).toBe(0);
  });
});
