/**
 * An import (or link sync) whose process dies between two queue batches of 500. Before, the
 * collection stood in lists looking whole with only its first batches, nothing repaired it, and
 * the client's retry made a second collection; a sync retried after a sync killed in its import
 * took the partial replacement for a whole one and deleted the complete old collection. Now the
 * collection carries its import's intent until its last batch: hidden from lists meanwhile, taken
 * back by the start-up task and the sweep once its lease lapsed. The kill is simulated
 * deterministically: from a chosen call on, every write of the import's process fails (no
 * take-back runs, as after `kill -9`), and lease clocks are run out instead of waited for.
 */
import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuthContext } from '../../src/platform/auth/types.js';
import { createCollectionImportService } from '../../src/platform/datasets/collections/collection-import.service.js';
import { settleLapsedImports } from '../../src/platform/datasets/collections/collection-imports.js';
import { createCollectionService } from '../../src/platform/datasets/collections/collection.service.js';
import type { DatasetsContext } from '../../src/platform/datasets/context.js';
import { type Client, client } from '../fixtures/datasets/client.js';
import { buildReplica, buildTestApp, type TestApp } from '../helpers/app.js';
import { type LocalSite, startLocalSite } from '../helpers/local-site.js';
import { createUser, login } from '../helpers/platform.js';
import { waitFor } from '../helpers/real-process.js';

let t: TestApp;
let api: Client;
let teamId: string;
let auth: AuthContext;
let site: LocalSite;
let page = '';

beforeAll(async () => {
  site = await startLocalSite((_req, res) => {
    res.setHeader('content-type', 'text/html');
    res.end(page);
  });
  t = await buildTestApp({ SSRF_ALLOW_PRIVATE: 'true' });
  const user = await createUser(t, { username: 'import-interrupted', password: 'password-1' });
  teamId = user.teamId;
  auth = { ...(await t.app.identity.memberContext(user.tmbId))!, authType: 'token' };
  api = client(t, await login(t, 'import-interrupted', 'password-1'));
});
afterAll(async () => {
  await t?.close();
  await site?.close();
});

const db = () => t.app.mongo.db;
const ITEMS = 1_200;
/** Three batches of 500 (the last one partial). */
const items = (topic: string) => Array.from({ length: ITEMS }, (_, n) => ({ q: `Fact ${n} about ${topic}.` }));
const collectionsOf = async (datasetId: string) => (await db().collection('dataset_collections').find({ datasetId: new ObjectId(datasetId) }).toArray()).map((doc) => String(doc._id));
const queued = (collectionId: string) => db().collection('dataset_trainings').countDocuments({ collectionId: new ObjectId(collectionId) });
const listed = async (datasetId: string) =>
  (await api.ok<{ data: { _id: string }[] }>(api.post('/core/dataset/collection/list', { datasetId, pageNum: 1, pageSize: 50 }))).data.map((item) => item._id);
/** Runs the leases of every import still marked out, as if its process had been dead that long. */
const runLeasesOut = () => db().collection('dataset_collections').updateMany({ importing: { $exists: true } }, { $set: { 'importing.until': new Date(0) } });

/**
 * The datasets context of a process killed at the `killAt`-th call of `repo.method`: that call
 * and every write of the queue and collections after it fail without doing anything (nothing
 * after a kill runs, the import's take-back included); reads still answer.
 */
function killedContext(repo: 'trainings' | 'collections', method: string, killAt: number): { ctx: DatasetsContext; killed: () => boolean } {
  const base = t.app.datasets.ctx;
  let calls = 0;
  let dead = false;
  const reads = new Set(['findById', 'findForAuth', 'findLinkReplacement', 'list', 'withDescendants', 'exists', 'existingIds', 'fileIdsUsedElsewhere', 'byDatasets']);
  const wrap = <T extends object>(name: string, target: T): T =>
    new Proxy(target, {
      get(object, key, receiver) {
        const value = Reflect.get(object, key, receiver);
        if (typeof value !== 'function' || typeof key !== 'string' || reads.has(key)) return value;
        return async (...args: unknown[]) => {
          if (name === repo && key === method && ++calls === killAt) dead = true;
          if (dead) throw new Error('the process was killed');
          return value.apply(object, args);
        };
      },
    });
  const ctx: DatasetsContext = { ...base, repos: { ...base.repos, trainings: wrap('trainings', base.repos.trainings), collections: wrap('collections', base.repos.collections) } };
  return { ctx, killed: () => dead };
}

describe('an import killed between its queue batches', () => {
  it('is hidden, taken back by the sweep once its lease lapsed, and a retry makes exactly one whole collection', async () => {
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Interrupted import' }));
    const dataset = (await t.app.datasets.ctx.repos.datasets.findById(teamId, datasetId))!;
    const { ctx, killed } = killedContext('trainings', 'insertMany', 2);
    const collection = { parentId: null, name: 'Zebras', type: 'virtual' as const, trainingType: 'chunk' as const, chunkSize: 512 };
    await expect(createCollectionImportService(ctx).insertWithItems(auth, dataset, collection, items('zebras'))).rejects.toThrow('killed');
    expect(killed()).toBe(true);
    const [partial] = await collectionsOf(datasetId);
    expect(partial).toBeDefined();
    expect(await queued(partial!)).toBe(500);
    // Not shown as a collection while its import is unfinished.
    expect(await listed(datasetId)).toEqual([]);

    // Inside its lease the sweep leaves it (its process may still be running).
    expect(await settleLapsedImports(t.app.datasets.ctx)).toBe(0);
    await runLeasesOut();
    expect(await settleLapsedImports(t.app.datasets.ctx)).toBe(1);
    expect(await collectionsOf(datasetId)).toEqual([]);
    expect(await queued(partial!)).toBe(0);

    // The client's retry.
    const { collectionId } = await createCollectionImportService(t.app.datasets.ctx).insertWithItems(auth, dataset, collection, items('zebras'));
    expect(await collectionsOf(datasetId)).toEqual([collectionId]);
    expect(await queued(collectionId)).toBe(ITEMS);
    expect(await listed(datasetId)).toEqual([collectionId]);
    // A whole import leaves no intent for the sweep.
    await runLeasesOut();
    expect(await settleLapsedImports(t.app.datasets.ctx)).toBe(0);
    expect(await collectionsOf(datasetId)).toEqual([collectionId]);
  });

  it('a process started after the kill takes the partial import back', async () => {
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Restarted' }));
    const dataset = (await t.app.datasets.ctx.repos.datasets.findById(teamId, datasetId))!;
    const { ctx } = killedContext('trainings', 'insertMany', 3);
    const collection = { parentId: null, name: 'Okapis', type: 'virtual' as const, trainingType: 'chunk' as const, chunkSize: 512 };
    await expect(createCollectionImportService(ctx).insertWithItems(auth, dataset, collection, items('okapis'))).rejects.toThrow('killed');
    const [partial] = await collectionsOf(datasetId);
    expect(await queued(partial!)).toBe(1_000);
    await runLeasesOut();
    const restarted = await buildReplica(t);
    try {
      await waitFor('the start-up task to take the import back', async () => (await collectionsOf(datasetId)).length === 0);
      expect(await queued(partial!)).toBe(0);
    } finally {
      await restarted.close();
    }
  });
});

describe('an import that stalled past its lease', () => {
  it('whose sweep took it back meanwhile ends with an error and leaves nothing (no collection whole in name only)', async () => {
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Stalled import' }));
    const dataset = (await t.app.datasets.ctx.repos.datasets.findById(teamId, datasetId))!;
    const base = t.app.datasets.ctx;
    let calls = 0;
    // Before its second batch the process stalls that long: the sweep takes the import back, then the process goes on.
    const ctx: DatasetsContext = {
      ...base,
      repos: {
        ...base.repos,
        trainings: {
          ...base.repos.trainings,
          insertMany: async (docs) => {
            if (++calls === 2) {
              await runLeasesOut();
              expect(await settleLapsedImports(base)).toBe(1);
            }
            return base.repos.trainings.insertMany(docs);
          },
        },
      },
    };
    const collection = { parentId: null, name: 'Tapirs', type: 'virtual' as const, trainingType: 'chunk' as const, chunkSize: 512 };
    await expect(createCollectionImportService(ctx).insertWithItems(auth, dataset, collection, items('tapirs'))).rejects.toThrow('lease');
    expect(await collectionsOf(datasetId)).toEqual([]);
    expect(await db().collection('dataset_trainings').countDocuments({ datasetId: new ObjectId(datasetId) })).toBe(0);
  });
});

describe('a link sync killed midway', () => {
  const paragraphs = (version: string) => Array.from({ length: ITEMS }, (_, n) => `<p>Version ${version}, paragraph ${n} of the synced page about giraffes and their long necks.</p>`).join('');

  async function linkCollection(name: string) {
    page = `<html><body><main>${paragraphs('one')}</main></body></html>`;
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name }));
    const created = await api.ok<{ collectionId: string; results: { insertLen: number } }>(
      api.post('/core/dataset/collection/create/link', { datasetId, link: `${site.url}/${name}`, trainingType: 'chunk', chunkSize: 100 }),
    );
    expect(created.results.insertLen).toBeGreaterThan(500);
    page = `<html><body><main>${paragraphs('two')}</main></body></html>`;
    return { datasetId, old: created.collectionId, oldQueued: await queued(created.collectionId) };
  }

  it('inside its import keeps the complete old collection: a retry does not take the partial replacement for a whole one', async () => {
    const { datasetId, old, oldQueued } = await linkCollection('sync-in-import');
    const { ctx } = killedContext('trainings', 'insertMany', 2);
    await expect(createCollectionService(ctx, createCollectionImportService(ctx)).syncLink(auth, old)).rejects.toThrow('killed');
    const partial = (await collectionsOf(datasetId)).find((id) => id !== old)!;
    expect(await queued(partial)).toBe(500);
    expect(await listed(datasetId)).toEqual([old]);

    // The retry imports a whole replacement; the old one goes only then.
    expect(await api.ok(api.post('/core/dataset/collection/sync/link', { collectionId: old }))).toBe('success');
    const [replacement, ...others] = await listed(datasetId);
    expect(others).toEqual([]);
    expect(replacement).not.toBe(old);
    expect(replacement).not.toBe(partial);
    const whole = await queued(replacement!);
    expect(whole).toBeGreaterThan(500);

    await runLeasesOut();
    expect(await settleLapsedImports(t.app.datasets.ctx)).toBe(1);
    expect(await collectionsOf(datasetId)).toEqual([replacement]);
    expect(await queued(replacement!)).toBe(whole);
    expect(oldQueued).toBeGreaterThan(500);
  });

  it('after its import, before deleting the old collection, is finished by the sweep: one collection stays', async () => {
    const { datasetId, old } = await linkCollection('sync-after-import');
    // The old collection's delete starts with its queue items: killed there.
    const { ctx } = killedContext('trainings', 'deleteByCollections', 1);
    await expect(createCollectionService(ctx, createCollectionImportService(ctx)).syncLink(auth, old)).rejects.toThrow('killed');
    const replacement = (await collectionsOf(datasetId)).find((id) => id !== old)!;
    const whole = await queued(replacement);
    expect(whole).toBeGreaterThan(500);
    expect((await collectionsOf(datasetId)).sort()).toEqual([old, replacement].sort());

    await runLeasesOut();
    expect(await settleLapsedImports(t.app.datasets.ctx)).toBe(1);
    expect(await collectionsOf(datasetId)).toEqual([replacement]);
    expect(await queued(old)).toBe(0);
    expect(await queued(replacement)).toBe(whole);
    expect(await listed(datasetId)).toEqual([replacement]);
    // The replacement is whole now: no intent is left for a later sweep.
    await runLeasesOut();
    expect(await settleLapsedImports(t.app.datasets.ctx)).toBe(0);
    expect(await collectionsOf(datasetId)).toEqual([replacement]);
  });
});
