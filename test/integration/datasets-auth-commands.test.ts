import { setTimeout as sleep } from 'node:timers/promises';
import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppError } from '../../src/infra/errors.js';
import { LIST_STAMP_LEASE_MS } from '../../src/infra/version-stamps.js';
import { collectionStampKey } from '../../src/platform/datasets/collections/collection-cache.js';
import { datasetListStampKey } from '../../src/platform/datasets/datasets/dataset-list.read-model.js';
import { searchStampKey } from '../../src/platform/datasets/search/dataset-index.js';
import { isCredentialEpochKey } from '../../src/platform/identity/credential-epoch.js';
import type { PermissionCaller } from '../../src/platform/permissions/index.js';
import { type Client, client } from '../fixtures/datasets/client.js';
import { buildReplica, buildTestApp, type TestApp } from '../helpers/app.js';
import { commandsDuring, type RecordedCommand } from '../helpers/command-counter.js';
import { createUser, login } from '../helpers/platform.js';

/**
 * Dataset, collection and data authorisation cost no database command when warm (the team's
 * dataset read model and the collection cache), and every write that changes who may do what,
 * or what a collection is, is seen by the very next request on another process of the same
 * database. Process B is warmed before each write through process A, so a write that forgot its
 * stamp would be answered from B's stale memory.
 */

let a: TestApp;
let b: TestApp;
let teamId: string;
let boss: PermissionCaller;
let ritaTmbId: string;
const on: Record<'a' | 'b', { boss: Client; rita: Client; other: Client }> = {} as never;

beforeAll(async () => {
  a = await buildTestApp({ PLAN_MAX_DATASETS: '1000' });
  // B keeps no data lists: its pages are database queries (a keeps them: data-list.read-model.ts).
  b = await buildReplica(a, { PLAN_MAX_DATASETS: '1000', DATA_LIST_CACHE_ITEMS: '0' });
  const owner = await createUser(a, { username: 'auth-boss', password: 'password-1' });
  teamId = owner.teamId;
  boss = { teamId, tmbId: owner.tmbId, role: 'owner', teamPermission: 0, isRoot: false };
  ritaTmbId = (await createUser(a, { username: 'auth-rita', password: 'password-1', teamId, role: 'member', permission: 4 })).tmbId;
  await createUser(a, { username: 'auth-other', password: 'password-1' });
  const tokens = { boss: await login(a, 'auth-boss', 'password-1'), rita: await login(a, 'auth-rita', 'password-1'), other: await login(a, 'auth-other', 'password-1') };
  for (const [name, t] of [
    ['a', a],
    ['b', b],
  ] as const) {
    on[name] = { boss: client(t, tokens.boss), rita: client(t, tokens.rita), other: client(t, tokens.other) };
  }
});

afterAll(async () => {
  await b?.close();
  await a?.close();
});

const writer = () => on.a.boss;
const perms = () => a.app.datasets.ctx.permissions;
let unique = 0;
const label = (what: string) => `${what} ${++unique}`;

async function createDataset(api: Client, body: Record<string, unknown>): Promise<string> {
  return api.ok<string>(api.post('/core/dataset/create', { name: label('dataset'), ...body }));
}
async function createFolder(parentId?: string): Promise<string> {
  const name = label('folder');
  await writer().ok(writer().post('/core/dataset/folder/create', { name, parentId }));
  const folders = await writer().ok<{ _id: string; name: string }[]>(writer().post('/core/dataset/list', { parentId: parentId ?? null, type: 'folder' }));
  return folders.find((f) => f.name === name)!._id;
}
const createCollection = (api: Client, datasetId: string, body: Record<string, unknown> = {}) =>
  api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: label('collection'), type: 'virtual', ...body }));
async function pushData(api: Client, collectionId: string, count: number) {
  await api.ok(api.post('/core/dataset/data/pushData', { collectionId, data: Array.from({ length: count }, (_, i) => ({ q: `question ${i}?`, a: `answer ${i}` })) }));
  await a.app.datasets.trainingWorker.drain();
}

/** A dataset (with a collection) of the boss's team, at `parentId` or the root. */
async function fixture(body: Record<string, unknown> = {}) {
  const datasetId = await createDataset(writer(), body);
  return { datasetId, collectionId: await createCollection(writer(), datasetId) };
}

/** The four hot reads of one caller: their status codes. */
async function access(api: Client, ids: { datasetId: string; collectionId: string }) {
  const [dataset, collections, collection, data] = await Promise.all([
    api.get('/core/dataset/detail', { id: ids.datasetId }),
    api.post('/core/dataset/collection/list', { datasetId: ids.datasetId }),
    api.get('/core/dataset/collection/detail', { id: ids.collectionId }),
    api.post('/core/dataset/data/list', { collectionId: ids.collectionId }),
  ]);
  return { dataset: dataset.status, collections: collections.status, collection: collection.status, data: data.status };
}
const all = (status: number) => ({ dataset: status, collections: status, collection: status, data: status });

/** Rita's answers on both processes: the writing one and the other. */
async function expectRita(ids: { datasetId: string; collectionId: string }, expected: ReturnType<typeof all>) {
  for (const name of ['b', 'a'] as const) expect(await access(on[name].rita, ids), `process ${name}`).toEqual(expected);
}

/**
 * Stamps read at most once per lease: the credential epoch, the team's two, and the dataset's
 * search index (its 1 s lease runs out between requests on a loaded machine).
 */
const searchStamps = new Set<string>();
const stampKeys = () => new Set([datasetListStampKey(teamId), collectionStampKey(teamId), ...searchStamps]);
const isStampRead = (c: RecordedCommand) => c.name === 'find' && c.collection === 'version_stamps' && (stampKeys().has(c.key ?? '') || isCredentialEpochKey(c.key));

/** The route's own commands on process a (or b), warm: after two runs, past the stamps' lease so they are read once. */
async function warmCost(api: Client, run: (api: Client) => Promise<{ status: number }>, app: TestApp = a) {
  expect((await run(api)).status).toBe(200);
  expect((await run(api)).status).toBe(200);
  await sleep(LIST_STAMP_LEASE_MS + 20);
  // Recounts of the training queue that earlier requests or drains started run in the background:
  // let them end, so that they are not taken for this request's commands on a slow machine.
  await app.app.datasets.ctx.repos.trainings.countsSettled();
  let status = 0;
  const commands = await commandsDuring(app.app, async () => {
    status = (await run(api)).status;
  });
  expect(status).toBe(200);
  const stamps = commands.filter(isStampRead).map((c) => c.key);
  expect(new Set(stamps).size, 'each stamp read at most once').toBe(stamps.length);
  return commands.filter((c) => !isStampRead(c)).map((c) => `${c.name} ${c.collection}`).sort();
}

describe('database commands of the hot dataset reads, warm', () => {
  let ids: { datasetId: string; collectionId: string };
  beforeAll(async () => {
    ids = await fixture();
    searchStamps.add(searchStampKey(ids.datasetId));
    await pushData(writer(), ids.collectionId, 3);
    // Rita reads as a collaborator: her own rows are judged from the read model too.
    await perms().updateCollaborators(boss, (await perms().tree.findById(ids.datasetId))!, [ritaTmbId], 4);
  });

  it("dataset/detail and collection/detail: none; collection/list: the page and its training counts (not the queue); data/list: its collection's stamp", async () => {
    for (const who of ['boss', 'rita'] as const) {
      const api = on.a[who];
      expect(await warmCost(api, (x) => x.get('/core/dataset/detail', { id: ids.datasetId })), who).toEqual([]);
      expect(await warmCost(api, (x) => x.get('/core/dataset/collection/detail', { id: ids.collectionId })), who).toEqual([]);
      expect(await warmCost(api, (x) => x.post('/core/dataset/collection/list', { datasetId: ids.datasetId })), who).toEqual([
        'find dataset_collections',
        'find dataset_training_counts',
      ]);
      // The collection's data list stamp (unleased, read by every page); the items are kept.
      expect(await warmCost(api, (x) => x.post('/core/dataset/data/list', { collectionId: ids.collectionId })), who).toEqual(['find version_stamps']);
    }
  });

  it("collection/list data amounts come from the dataset's search index and follow writes on both processes", async () => {
    const fresh = await fixture();
    const amount = async (api: Client) => {
      const page = await api.ok<{ data: { _id: string; dataAmount: number }[] }>(api.post('/core/dataset/collection/list', { datasetId: fresh.datasetId }));
      return page.data.find((item) => item._id === fresh.collectionId)?.dataAmount;
    };
    expect(await amount(on.b.boss)).toBe(0);
    await pushData(writer(), fresh.collectionId, 3);
    expect(await amount(on.a.boss)).toBe(3);
    // Another process reads the index's change log once the dataset's stamp moves (leased 1 s).
    await expect.poll(() => amount(on.b.boss), { timeout: 5000 }).toBe(3);
    const [item] = (await writer().ok<{ data: { _id: string }[] }>(writer().post('/core/dataset/data/list', { collectionId: fresh.collectionId }))).data;
    await writer().ok(writer().del('/core/dataset/data/delete', { id: item!._id }));
    expect(await amount(on.a.boss)).toBe(2);
    await expect.poll(() => amount(on.b.boss), { timeout: 5000 }).toBe(2);
  });

  it('without kept data lists, counts only when the page cannot tell the total, and the total is right either way', async () => {
    const api = on.b.boss;
    const v2 = (offset: number, pageSize: number) => (x: Client) => x.post('/core/dataset/data/v2/list', { collectionId: ids.collectionId, offset, pageSize });
    for (const [offset, pageSize, counted, listed] of [
      [0, 2, true, 2], // a full page: more may follow
      [2, 2, false, 1], // the last page
      [0, 5, false, 3],
      [4, 2, true, 0], // past the end: the matches may end anywhere before
      [10, 2, true, 0],
    ] as const) {
      const cost = await warmCost(api, v2(offset, pageSize), b);
      expect(cost, `offset ${offset} size ${pageSize}`).toEqual(counted ? ['aggregate dataset_datas', 'find dataset_datas'] : ['find dataset_datas']);
      const page = await api.ok<{ list: unknown[]; total: number }>(v2(offset, pageSize)(api));
      expect(page).toMatchObject({ total: 3 });
      expect(page.list).toHaveLength(listed);
    }
    const searched = await api.ok<{ list: unknown[]; total: number }>(api.post('/core/dataset/data/v2/list', { collectionId: ids.collectionId, searchText: 'question 1', pageSize: 5 }));
    expect(searched).toMatchObject({ total: 1 });
    const pastEnd = await api.ok<{ data: unknown[]; total: number }>(api.post('/core/dataset/collection/list', { datasetId: ids.datasetId, pageNum: 2 }));
    expect(pastEnd).toMatchObject({ data: [], total: 1 });
    const simple = await warmCost(on.a.boss, (x) => x.post('/core/dataset/collection/list', { datasetId: ids.datasetId, simple: true }));
    expect(simple).toEqual(['find dataset_collections']);
  });

  it('shares frozen documents between requests', async () => {
    const auth = { ...boss, userId: '', authType: 'session' } as never;
    const { dataset } = await a.app.datasets.ctx.auth.authDataset(auth, ids.datasetId, 'read');
    const { collection } = await a.app.datasets.ctx.auth.authCollection(auth, ids.collectionId, 'read');
    expect(Object.isFrozen(dataset)).toBe(true);
    expect(Object.isFrozen(collection)).toBe(true);
    expect(Object.isFrozen(collection.metadata)).toBe(true);
  });
});

describe('ids the caller’s team does not hold get the same errors as before', () => {
  it("another team's dataset and collection: 403; unknown: 404; malformed: 400", async () => {
    const foreign = await createDataset(on.a.other, {});
    const foreignCollection = await createCollection(on.a.other, foreign);
    const unknown = new ObjectId().toHexString();
    /** The former answer: the permission service's database path. */
    const former = (id: string) =>
      perms()
        .authorize(boss, id, 'read', 'id')
        .then(
          () => ({ status: 200, message: '' }),
          (error: AppError) => ({ status: error.httpStatus, message: error.message }),
        );
    for (const name of ['b', 'a'] as const) {
      const { boss: api, other } = on[name];
      // Both teams warm on this process: the other team's collection is kept, for its team only.
      expect((await access(other, { datasetId: foreign, collectionId: foreignCollection })).collection).toBe(200);
      await access(api, await fixture());
      for (let round = 0; round < 2; round++) {
        const detail = await api.get('/core/dataset/detail', { id: foreign });
        expect({ status: detail.status, message: detail.body.message }).toEqual(await former(foreign));
        expect(detail.body).toMatchObject({ statusText: 'unAuthDataset', message: `Dataset ${foreign} belongs to another team` });
        const collection = await api.get('/core/dataset/collection/detail', { id: foreignCollection });
        expect(collection.status).toBe(403);
        expect(collection.body.message).toBe(`Dataset ${foreign} belongs to another team`);
        expect((await api.post('/core/dataset/data/list', { collectionId: foreignCollection })).status).toBe(403);
        expect((await api.post('/core/dataset/collection/list', { datasetId: foreign })).status).toBe(403);
      }
      const missing = await api.get('/core/dataset/detail', { id: unknown });
      expect({ status: missing.status, message: missing.body.message }).toEqual(await former(unknown));
      expect(missing.body.statusText).toBe('unExistDataset');
      expect((await api.get('/core/dataset/collection/detail', { id: unknown })).status).toBe(404);
      expect((await api.post('/core/dataset/data/list', { collectionId: unknown })).status).toBe(404);
      expect((await api.get('/core/dataset/detail', { id: 'nope' })).status).toBe(400);
      expect((await api.get('/core/dataset/collection/detail', { id: 'nope' })).status).toBe(400);
    }
  });
});

describe('a write through one process is seen by the next request on the other', () => {
  it('collaborators: added, then removed', async () => {
    const ids = await fixture();
    const doc = async () => (await perms().tree.findById(ids.datasetId))!;
    await expectRita(ids, all(403));
    await perms().updateCollaborators(boss, await doc(), [ritaTmbId], 4);
    await expectRita(ids, all(200));
    const detail = await on.b.rita.ok<{ permission: { hasWritePer: boolean } }>(on.b.rita.get('/core/dataset/detail', { id: ids.datasetId }));
    expect(detail.permission.hasWritePer).toBe(false);
    await perms().updateCollaborators(boss, await doc(), [ritaTmbId], 6);
    const upgraded = await on.b.rita.ok<{ permission: { hasWritePer: boolean } }>(on.b.rita.get('/core/dataset/detail', { id: ids.datasetId }));
    expect(upgraded.permission.hasWritePer).toBe(true);
    await perms().deleteCollaborator(boss, await doc(), ritaTmbId);
    await expectRita(ids, all(403));
  });

  it('default permission: shared with the team, then private again', async () => {
    const ids = await fixture();
    await expectRita(ids, all(403));
    await writer().ok(writer().post('/core/dataset/update', { id: ids.datasetId, defaultPermission: 4 }));
    await expectRita(ids, all(200));
    await writer().ok(writer().post('/core/dataset/update', { id: ids.datasetId, defaultPermission: 0 }));
    await expectRita(ids, all(403));
  });

  it('a move into a folder that refuses the member, and back to the root', async () => {
    const ids = await fixture();
    await writer().ok(writer().post('/core/dataset/update', { id: ids.datasetId, defaultPermission: 4 }));
    const closed = await createFolder();
    await expectRita(ids, all(200));
    await writer().ok(writer().post('/core/dataset/update', { id: ids.datasetId, parentId: closed }));
    await expectRita(ids, all(403));
    const refused = await on.b.rita.get('/core/dataset/detail', { id: ids.datasetId });
    expect(refused.body.message).toBe(`read permission on dataset ${ids.datasetId} is required (refused by its folder ${closed})`);
    await writer().ok(writer().post('/core/dataset/update', { id: ids.datasetId, parentId: '' }));
    await expectRita(ids, all(200));
  });

  it('inheritance resumed: a dataset opened inside a private folder follows the folder again', async () => {
    const closed = await createFolder();
    const ids = await fixture({ parentId: closed });
    await expectRita(ids, all(403));
    await writer().ok(writer().post('/core/dataset/update', { id: ids.datasetId, defaultPermission: 4 }));
    await expectRita(ids, all(200));
    await writer().ok(writer().post('/core/dataset/resumeInheritPermission', { datasetId: ids.datasetId }));
    await expectRita(ids, all(403));
  });

  it('a dataset delete', async () => {
    const ids = await fixture();
    await writer().ok(writer().post('/core/dataset/update', { id: ids.datasetId, defaultPermission: 4 }));
    await expectRita(ids, all(200));
    await writer().ok(writer().del('/core/dataset/delete', { id: ids.datasetId }));
    await expectRita(ids, all(404));
  });

  it('a collection delete, and a data item delete', async () => {
    const ids = await fixture();
    await writer().ok(writer().post('/core/dataset/update', { id: ids.datasetId, defaultPermission: 6 }));
    await pushData(writer(), ids.collectionId, 1);
    const [item] = (await writer().ok<{ data: { _id: string }[] }>(writer().post('/core/dataset/data/list', { collectionId: ids.collectionId }))).data;
    for (const name of ['b', 'a'] as const) expect((await on[name].rita.get('/core/dataset/data/detail', { id: item!._id })).status).toBe(200);
    await writer().ok(writer().del('/core/dataset/data/delete', { id: item!._id }));
    for (const name of ['b', 'a'] as const) expect((await on[name].rita.get('/core/dataset/data/detail', { id: item!._id })).status).toBe(404);
    await expectRita(ids, all(200));
    await writer().ok(writer().del('/core/dataset/collection/delete', { id: ids.collectionId }));
    await expectRita(ids, { dataset: 200, collections: 200, collection: 404, data: 404 });
  });

  it('a collection renamed, moved, forbidden with its folder', async () => {
    const ids = await fixture();
    await writer().ok(writer().post('/core/dataset/update', { id: ids.datasetId, defaultPermission: 4 }));
    const folder = await createCollection(writer(), ids.datasetId, { type: 'folder' });
    const child = await createCollection(writer(), ids.datasetId, { parentId: folder });
    type Detail = { name: string; parentId: string | null; forbid: boolean };
    const detail = (name: 'a' | 'b', id: string) => on[name].rita.ok<Detail>(on[name].rita.get('/core/dataset/collection/detail', { id }));
    for (const name of ['b', 'a'] as const) await Promise.all([detail(name, ids.collectionId), detail(name, child)]);
    const renamed = label('renamed');
    await writer().ok(writer().put('/core/dataset/collection/update', { id: ids.collectionId, name: renamed, parentId: folder }));
    await writer().ok(writer().put('/core/dataset/collection/update', { id: folder, forbid: true }));
    for (const name of ['b', 'a'] as const) {
      expect(await detail(name, ids.collectionId), name).toMatchObject({ name: renamed, parentId: folder, forbid: true });
      expect(await detail(name, child), name).toMatchObject({ forbid: true });
    }
  });

  it('a write into a collection reads it fresh: a delete whose bump never came (its process died) refuses data at once', async () => {
    const ids = await fixture();
    for (const name of ['b', 'a'] as const) expect((await on[name].boss.get('/core/dataset/collection/detail', { id: ids.collectionId })).status).toBe(200);
    // The delete lands, the stamp bump does not (as when the deleting process dies in between).
    await a.app.mongo.db.collection('dataset_collections').deleteOne({ _id: new ObjectId(ids.collectionId) });
    for (const name of ['b', 'a'] as const) {
      const push = await on[name].boss.post('/core/dataset/data/pushData', { collectionId: ids.collectionId, data: [{ q: 'orphan?', a: 'no' }] });
      expect(push.status, name).not.toBe(200);
      expect(push.body, name).toMatchObject({ code: 501002, statusText: 'unAuthDatasetCollection' });
    }
    expect(await a.app.mongo.db.collection('dataset_datas').countDocuments({ collectionId: new ObjectId(ids.collectionId) })).toBe(0);
  });
});
