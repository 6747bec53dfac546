/**
 * The training amounts the web client polls during an import (collection list, dataset queue)
 * come from per-collection counts fed by every queue write, not from counting the queue (a read
 * of every queued item of the dataset on FerretDB). Each write path shows at once on every
 * process; racing writers add up; folded deltas are never counted twice; drift (a crash between
 * a queue write and its count) is recounted once the queue is quiet.
 */
import { MongoClient, ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTrainingCounts } from '../../src/platform/datasets/training/training-counts.js';
import { createTrainingRepo } from '../../src/platform/datasets/training/training.repo.js';
import { createTrainingWorker } from '../../src/platform/datasets/training/training-worker.js';
import { type Client, client } from '../fixtures/datasets/client.js';
import { buildReplica, buildTestApp, type TestApp } from '../helpers/app.js';
import { commandsDuring } from '../helpers/command-counter.js';
import { createUser, login } from '../helpers/platform.js';

let a: TestApp;
let b: TestApp;
let onA: Client;
let onB: Client;

beforeAll(async () => {
  a = await buildTestApp({ TRAINING_WORKER: 'false' });
  b = await buildReplica(a);
  await createUser(a, { username: 'counts-boss', password: 'password-1' });
  const token = await login(a, 'counts-boss', 'password-1');
  onA = client(a, token);
  onB = client(b, token);
});
afterAll(async () => {
  await b?.close();
  await a?.close();
});

const db = () => a.app.mongo.db;
const queue = (api: Client, datasetId: string) =>
  api.ok<{ trainingCount: number; failedItems: { errorMsg: string }[] }>(api.get('/core/dataset/training/getDatasetTrainingQueue', { datasetId }));
async function amounts(api: Client, datasetId: string): Promise<Record<string, number>> {
  const page = await api.ok<{ data: { _id: string; trainingAmount: number }[] }>(api.post('/core/dataset/collection/list', { datasetId, pageSize: 30 }));
  return Object.fromEntries(page.data.map((row) => [row._id, row.trainingAmount]));
}
const push = (collectionId: string, n: number, tag = new ObjectId().toHexString()) =>
  onA.ok(onA.post('/core/dataset/data/pushData', { collectionId, data: Array.from({ length: n }, (_, i) => ({ q: `${tag} item ${i}` })) }));

async function dataset(collections = 2) {
  const datasetId = await onA.ok<string>(onA.post('/core/dataset/create', { name: `queued ${new ObjectId().toHexString()}` }));
  const ids: string[] = [];
  for (let i = 0; i < collections; i++) ids.push(await onA.ok<string>(onA.post('/core/dataset/collection/create', { datasetId, name: `c${i}`, type: 'virtual' })));
  return { datasetId, ids };
}

describe('training amounts', () => {
  it('follow pushes, the worker, a collection delete and a dataset delete at once on both processes', async () => {
    const { datasetId, ids } = await dataset(3);
    const [c0, c1, c2] = ids as [string, string, string];
    expect(await amounts(onB, datasetId)).toEqual({ [c0]: 0, [c1]: 0, [c2]: 0 });
    await push(c0, 5);
    await push(c1, 3);
    await push(c2, 2);
    expect(await amounts(onB, datasetId)).toEqual({ [c0]: 5, [c1]: 3, [c2]: 2 });
    expect((await queue(onB, datasetId)).trainingCount).toBe(10);

    await onA.ok(onA.del('/core/dataset/collection/delete', { id: c2 }));
    expect(await amounts(onB, datasetId)).toEqual({ [c0]: 5, [c1]: 3 });
    expect((await queue(onB, datasetId)).trainingCount).toBe(8);

    // The worker of process b trains everything: both processes see empty queues at once.
    await b.app.datasets.trainingWorker.drain();
    expect(await amounts(onA, datasetId)).toEqual({ [c0]: 0, [c1]: 0 });
    expect((await queue(onA, datasetId)).trainingCount).toBe(0);
    expect(await db().collection('dataset_trainings').countDocuments({ datasetId: new ObjectId(datasetId) })).toBe(0);

    await push(c1, 4);
    expect((await queue(onB, datasetId)).trainingCount).toBe(4);
    await onA.ok(onA.del('/core/dataset/delete', { id: datasetId }));
    await a.app.datasets.ctx.repos.trainings.countsSettled();
    expect(await db().collection('dataset_training_counts').countDocuments({ datasetId: new ObjectId(datasetId) })).toBe(0);
  });

  it('reads count documents, never the queue', async () => {
    const { datasetId, ids } = await dataset(1);
    await push(ids[0]!, 20);
    await amounts(onB, datasetId);
    const queueReads = async (read: () => Promise<unknown>) => {
      const commands = await commandsDuring(b.app, read);
      expect(commands.map((command) => command.collection)).toContain('dataset_training_counts');
      return commands.filter((command) => command.collection === 'dataset_trainings').map((command) => command.name);
    };
    expect(await queueReads(() => amounts(onB, datasetId))).toEqual([]);
    // Only the failed items are read from the queue, by their flag (see the test below).
    expect(await queueReads(() => queue(onB, datasetId))).toEqual(['find']);
    // A model's queue length: its stopped items are counted, by their flag, nothing else.
    const { vectorModel } = await onB.ok<{ vectorModel: { model: string } }>(onB.get('/core/dataset/detail', { id: datasetId }));
    const queueLen = () => onB.ok<{ vectorTrainingCount: number }>(onB.get('/core/dataset/training/getQueueLen', { vectorModel: vectorModel.model }));
    expect((await queueLen()).vectorTrainingCount).toBeGreaterThanOrEqual(20);
    expect(await queueReads(queueLen)).toEqual(['aggregate']);
  });

  it('counts a queue that has no counts yet (items queued before counting began) on its first read', async () => {
    const { datasetId, ids } = await dataset(1);
    await push(ids[0]!, 6);
    await db().collection('dataset_training_counts').deleteMany({ datasetId: new ObjectId(datasetId) });
    expect(await amounts(onB, datasetId)).toEqual({ [ids[0]!]: 6 });
    expect((await queue(onA, datasetId)).trainingCount).toBe(6);
  });

  it('a first read whose lock stays taken (its holder died) answers from a count of its own', async () => {
    const { datasetId, ids } = await dataset(1);
    await push(ids[0]!, 4);
    await db().collection('dataset_training_counts').deleteMany({ datasetId: new ObjectId(datasetId) });
    await db()
      .collection<{ _id: string; holder: string; expiresAt: Date }>('resource_tree_locks')
      .insertOne({ _id: `dataset_training_counts:${datasetId}`, holder: 'a process that died', expiresAt: new Date(Date.now() + 60_000) });
    // Process b's reads of the counts go through the same repository code on the same database,
    // waiting 300 ms for the lock instead of the default 10 s (the wait given up is the point,
    // not its length).
    const trainings = b.app.datasets.ctx.repos.trainings;
    const countedByCollection = trainings.countedByCollection;
    trainings.countedByCollection = createTrainingRepo(b.app.mongo.db, undefined, { lockWaitMs: 300 }).countedByCollection;
    try {
      expect(await amounts(onB, datasetId)).toEqual({ [ids[0]!]: 4 });
      expect(await db().collection('dataset_training_counts').countDocuments({ datasetId: new ObjectId(datasetId) })).toBe(0);
      await db().collection('resource_tree_locks').deleteOne({ _id: `dataset_training_counts:${datasetId}` } as never);
      expect(await amounts(onB, datasetId)).toEqual({ [ids[0]!]: 4 });
      expect(await db().collection('dataset_training_counts').countDocuments({ datasetId: new ObjectId(datasetId) })).toBe(1);
    } finally {
      trainings.countedByCollection = countedByCollection;
    }
  });

  it('a queue removal that lost its count (a crash between the two) is mended when a worker runs dry', async () => {
    const { datasetId, ids } = await dataset(1);
    await push(ids[0]!, 5);
    expect((await queue(onA, datasetId)).trainingCount).toBe(5);
    // As if a worker died between deleting an item and recording that: the queue holds 4, the counts say 5.
    await db().collection('dataset_trainings').deleteOne({ datasetId: new ObjectId(datasetId) });
    expect((await queue(onA, datasetId)).trainingCount).toBe(5);
    const worker = createTrainingWorker(b.app.datasets.ctx, { countsSettleMs: 0 });
    expect(await worker.drain()).toBeGreaterThanOrEqual(4);
    await b.app.datasets.ctx.repos.trainings.countsSettled();
    expect((await queue(onA, datasetId)).trainingCount).toBe(0);
    expect(await amounts(onB, datasetId)).toEqual({ [ids[0]!]: 0 });
  });

  it('lists and retries failed items by their flags, including items that failed before the flags existed', async () => {
    const { datasetId, ids } = await dataset(1);
    await push(ids[0]!, 3);
    const items = db().collection('dataset_trainings');
    const [retrying, gaveUp] = await items.find({ datasetId: new ObjectId(datasetId) }).toArray();
    // As an earlier version left them: an error and a lockTime, no flags.
    await items.updateOne({ _id: retrying!._id }, { $set: { errorMsg: 'provider down (retrying)', retryCount: 1, lockTime: new Date('2026-01-01T00:00:00Z') } });
    await items.updateOne({ _id: gaveUp!._id }, { $set: { errorMsg: 'provider down (gave up)', retryCount: 5, lockTime: new Date('2998-05-05T00:00:00Z') } });
    expect((await queue(onA, datasetId)).failedItems).toEqual([]);
    expect(await a.app.datasets.ctx.repos.trainings.flagEarlierFailures()).toBe(2);
    expect((await queue(onA, datasetId)).failedItems.map((item) => item.errorMsg).sort()).toEqual(['provider down (gave up)', 'provider down (retrying)']);
    // The worker claims the never-failed item and the one whose backoff ran out, not the one that gave up.
    await a.app.datasets.trainingWorker.drain();
    expect((await items.find({ datasetId: new ObjectId(datasetId) }).toArray()).map((item) => item._id)).toEqual([gaveUp!._id]);
    expect(await amounts(onB, datasetId)).toEqual({ [ids[0]!]: 1 });
  });
});

describe('the count documents', () => {
  const datasetId = new ObjectId().toHexString();
  const team = new ObjectId().toHexString();
  /** The queue the counts describe, as the recount would find it (one model). */
  const truth: Record<string, number> = {};
  const counts = (now?: () => Date) =>
    createTrainingCounts(db(), { recount: async () => Object.entries(truth).map(([c, n]) => ({ c, m: 'embed.v1', n })), now });
  const change = (collectionId: string, delta: number) => ({ teamId: team, datasetId, collectionId, model: 'embed.v1', delta });

  it('add up when many writers on two processes race, and fold without counting twice', async () => {
    const [one, two] = [counts(), counts()];
    expect(await one.read(team, datasetId)).toEqual(new Map());
    const writes = Array.from({ length: 80 }, (_, i) => (i % 2 === 0 ? one : two).record([change('c1', 3), change('c2', i % 4 === 0 ? -1 : 1)]));
    await Promise.all(writes);
    await Promise.all([one.settled(), two.settled()]);
    const expected = new Map([
      ['c1', 240],
      ['c2', 40],
    ]);
    expect(await two.read(team, datasetId)).toEqual(expected);
    // Folds ran (80 deltas from two processes, 32 per fold): fewer documents than writes.
    const docs = await db().collection('dataset_training_counts').countDocuments({ datasetId: new ObjectId(datasetId) });
    expect(docs).toBeLessThan(80);

    // A fold that crashed after writing its base and before deleting its deltas: counted once.
    const base = await db().collection<{ _id: string; folded: ObjectId[] }>('dataset_training_counts').findOne({ _id: `base:${datasetId}` });
    const leftover = new ObjectId();
    await db()
      .collection('dataset_training_counts')
      .insertOne({ _id: leftover, teamId: new ObjectId(team), datasetId: new ObjectId(datasetId), counts: [{ c: 'c1', m: 'embed.v1', n: 1000 }] });
    await db()
      .collection<{ _id: string; folded: ObjectId[] }>('dataset_training_counts')
      .updateOne({ _id: `base:${datasetId}` }, { $set: { folded: [...(base?.folded ?? []), leftover] } });
    expect(await one.read(team, datasetId)).toEqual(expected);
  });

  it('drift is recounted from the queue once it has been quiet for a minute, not before', async () => {
    truth.c1 = 240;
    truth.c2 = 40;
    const ahead = (ms: number) => () => new Date(Date.now() + ms);
    // A crash between a queue write and its count: the queue holds 5 more than counted.
    truth.c1 += 5;
    await counts().record([change('c1', 1)]);
    truth.c1 += 1;
    const busy = counts(ahead(0));
    expect((await busy.read(team, datasetId)).get('c1')).toBe(241);
    await busy.settled();
    expect((await busy.read(team, datasetId)).get('c1')).toBe(241);
    const quiet = counts(ahead(2 * 60_000));
    await quiet.read(team, datasetId);
    await quiet.settled();
    expect((await busy.read(team, datasetId)).get('c1')).toBe(246);
    expect((await busy.read(team, datasetId)).get('c2')).toBe(40);

    // Drift with no change after it (a crash at the queue's last write): rechecked within the hour.
    truth.c1 += 3;
    expect((await busy.read(team, datasetId)).get('c1')).toBe(246);
    const hourLater = counts(ahead(2 * 60 * 60_000));
    await hourLater.read(team, datasetId);
    await hourLater.settled();
    expect((await busy.read(team, datasetId)).get('c1')).toBe(249);
  });

  it('a worker running dry recounts changed counts still showing items once they settle, and nothing else', async () => {
    // Its own database: the check reads every dataset's counts.
    const own = a.app.mongo.client.db(`recheck-${new ObjectId().toHexString()}`);
    const queued: Record<string, number> = { c1: 0 };
    let recounts = 0;
    let clock = Date.now();
    const recheck = createTrainingCounts(own, {
      recount: async () => {
        recounts += 1;
        return Object.entries(queued).map(([c, n]) => ({ c, m: 'embed.v1', n }));
      },
      now: () => new Date(clock),
    });
    expect(await recheck.read(team, datasetId)).toEqual(new Map());
    await recheck.settled();
    expect(recounts).toBe(1);
    clock += 1_000;
    queued.c1 = 5;
    await recheck.record([change('c1', 5)]);
    // The queue ran dry but for one stopped item, and one removal's delta was lost: the counts say 2.
    clock += 1_000;
    queued.c1 = 1;
    await recheck.record([change('c1', -3)]);
    expect((await recheck.read(team, datasetId)).get('c1')).toBe(2);

    // Changed a moment ago: not yet (a racing removal could be missed), the caller is to ask again.
    clock += 1_000;
    expect(await recheck.recheckAfterDrain(5_000)).toBe(1);
    await recheck.settled();
    expect(recounts).toBe(1);
    clock += 5_000;
    expect(await recheck.recheckAfterDrain(5_000)).toBe(0);
    await recheck.settled();
    expect(recounts).toBe(2);
    expect(await recheck.read(team, datasetId)).toEqual(new Map([['c1', 1]]));
    // Counts unchanged since their last check are not recounted again, items or not.
    clock += 60_000;
    expect(await recheck.recheckAfterDrain(5_000)).toBe(0);
    await recheck.settled();
    expect(recounts).toBe(2);
    await own.dropDatabase();
  });

  it('a failed count write does not fail the queue write it describes', async () => {
    const failures: unknown[] = [];
    // A database that cannot be reached (nothing listens on port 1).
    const client = new MongoClient('mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=200');
    const unreachable = createTrainingCounts(client.db('nowhere'), { recount: async () => [], onError: (error) => failures.push(error) });
    await expect(unreachable.record([change('c1', 1)])).resolves.toBeUndefined();
    expect(failures).toHaveLength(1);
    await client.close();
  });
});
