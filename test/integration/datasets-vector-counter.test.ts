/**
 * The plan's dataset size (stored vectors) comes from a per-team counter fed by every vector
 * write and delete, not from a count of the vectors (a scan of them all on FerretDB): the plan
 * page, the size check and every import read one small document. The counter follows inserts,
 * item deletes and collection deletes at once on every process, concurrent writes add up, and
 * drift (a crash between a write and its count) is corrected from the real count: before a
 * refusal, and once an hour behind a read. What a write is checked for is the vectors it will
 * store: every index of every item (custom ones, and q alone for a Q/A pair), and for an update
 * the indexes it adds less those it replaces or removes.
 */
import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, client, multipart } from '../fixtures/datasets/client.js';
import { buildReplica, buildTestApp, type TestApp } from '../helpers/app.js';
import { commandsDuring } from '../helpers/command-counter.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';

let a: TestApp;
let b: TestApp;
let teamId: string;
let onA: Client;
let onB: Client;
let token: string;

beforeAll(async () => {
  a = await buildTestApp();
  b = await buildReplica(a);
  teamId = (await createUser(a, { username: 'vectors-boss', password: 'password-1' })).teamId;
  token = await login(a, 'vectors-boss', 'password-1');
  onA = client(a, token);
  onB = client(b, token);
});
afterAll(async () => {
  await b?.close();
  await a?.close();
});

const counters = () => a.app.mongo.db.collection<{ _id: string; count: number; reservedAt: Date; checkedAt?: Date }>('team_counters');
const realCount = () => a.app.mongo.db.collection('dataset_vectors').countDocuments({ teamId: new ObjectId(teamId) });
const planUsed = async (api: Client) => (await api.ok<{ usedDatasetSize: number }>(api.get('/support/user/team/plan/getTeamPlanStatus'))).usedDatasetSize;

async function collection(): Promise<string> {
  const datasetId = await onA.ok<string>(onA.post('/core/dataset/create', { name: `sized ${new ObjectId().toHexString()}` }));
  return onA.ok<string>(onA.post('/core/dataset/collection/create', { datasetId, name: 'c', type: 'virtual' }));
}
const insert = (collectionId: string, q: string, indexes = 0) =>
  onA.ok<string>(onA.post('/core/dataset/data/insertData', { collectionId, q, a: 'answer', indexes: Array.from({ length: indexes }, (_, i) => ({ text: `${q} index ${i}` })) }));

describe('the team vector counter', () => {
  it('follows inserts and deletes at once on both processes, and the plan page reads no vector', async () => {
    const collectionId = await collection();
    expect(await planUsed(onB)).toBe(await realCount());
    const first = await insert(collectionId, 'first', 2);
    await insert(collectionId, 'second');
    const afterInserts = await realCount();
    expect(afterInserts).toBeGreaterThanOrEqual(3);
    expect(await planUsed(onB)).toBe(afterInserts);
    const commands = await commandsDuring(b.app, () => planUsed(onB));
    expect(commands.filter((command) => command.collection === 'dataset_vectors')).toEqual([]);

    await onA.ok(onA.del('/core/dataset/data/delete', { id: first }));
    const afterItemDelete = await realCount();
    expect(afterItemDelete).toBeLessThan(afterInserts);
    expect(await planUsed(onB)).toBe(afterItemDelete);
    await onA.ok(onA.del('/core/dataset/collection/delete', { id: collectionId }));
    await a.app.datasets.trainingWorker.drain();
    expect(await planUsed(onB)).toBe(await realCount());
  });

  it('counts pushed data once trained, and concurrent writes add up', async () => {
    const collectionId = await collection();
    await onA.ok(onA.post('/core/dataset/data/pushData', { collectionId, data: Array.from({ length: 4 }, (_, i) => ({ q: `pushed ${i}?`, a: `answer ${i}` })) }));
    await a.app.datasets.trainingWorker.drain();
    await Promise.all(Array.from({ length: 8 }, (_, i) => insert(collectionId, `parallel ${i}`, i % 3)));
    const real = await realCount();
    expect((await counters().findOne({ _id: `vectors:${teamId}` }))?.count).toBe(real);
    expect(await planUsed(onA)).toBe(real);
  });

  it('refuses what passes the plan and stores nothing; a drifted quiet counter is recounted before refusing', async () => {
    const collectionId = await collection();
    const used = await realCount();
    await a.app.teamLimits.setPlan(teamId, { maxDatasetSize: used + 2 });
    const before = await realCount();
    const refused = await onA.post('/core/dataset/data/insertData', { collectionId, q: 'too big', indexes: Array.from({ length: 3 }, (_, i) => ({ text: `t ${i}` })) });
    expect(refused.body).toMatchObject({ statusText: 'datasetSizeNotEnough' });
    expect(await realCount()).toBe(before);

    // A crash left the counter too high while nothing changed for a while: the check recounts.
    const longAgo = new Date(Date.now() - 10 * 60_000);
    await counters().updateOne({ _id: `vectors:${teamId}` }, { $set: { count: used + 100, reservedAt: longAgo, checkedAt: longAgo } });
    await insert(collectionId, 'fits', 1);
    expect((await counters().findOne({ _id: `vectors:${teamId}` }))?.count).toBe(await realCount());
    // A refusal within a minute of that recount trusts the counter: no scan of the vectors.
    const again = await commandsDuring(a.app, async () => {
      expect((await onA.post('/core/dataset/data/insertData', { collectionId, q: 'still too big', indexes: [{ text: 'x' }, { text: 'y' }] })).body).toMatchObject({ statusText: 'datasetSizeNotEnough' });
    });
    expect(again.filter((command) => command.collection === 'dataset_vectors')).toEqual([]);
    await a.app.teamLimits.setPlan(teamId, { maxDatasetSize: 1_000_000 });
  });

  it('sizes a push by the mode it queues in: Q/A pushed into a chunk collection counts as Q/A', async () => {
    const collectionId = await collection();
    await a.app.teamLimits.setPlan(teamId, { maxDatasetSize: (await realCount()) + 10 });
    const queued = await a.app.mongo.db.collection('dataset_trainings').countDocuments({ collectionId: new ObjectId(collectionId) });
    // Two items as chunks fit (2 vectors); as Q/A they are predicted at 20 each.
    const refused = await onA.post('/core/dataset/data/pushData', { collectionId, trainingMode: 'qa', data: [{ q: 'one' }, { q: 'two' }] });
    expect(refused.body).toMatchObject({ statusText: 'datasetSizeNotEnough' });
    expect(await a.app.mongo.db.collection('dataset_trainings').countDocuments({ collectionId: new ObjectId(collectionId) })).toBe(queued);
    await onA.ok(onA.post('/core/dataset/data/pushData', { collectionId, trainingMode: 'chunk', data: [{ q: 'one' }, { q: 'two' }] }));
    await a.app.teamLimits.setPlan(teamId, { maxDatasetSize: 1_000_000 });
  });

  it('sizes a chunk push by the indexes each item gets: custom indexes and the q of a Q/A pair count', async () => {
    const collectionId = await collection();
    const queued = () => a.app.mongo.db.collection('dataset_trainings').countDocuments({ collectionId: new ObjectId(collectionId) });
    await a.app.datasets.trainingWorker.drain();
    const used = await realCount();
    // One item with 50 custom indexes stores 51 vectors (the default index is added); pushed as "1" it passed a plan of 1.
    const item = { q: 'pushed question', a: 'pushed answer', indexes: Array.from({ length: 50 }, (_, i) => ({ text: `custom index ${i}` })) };
    await a.app.teamLimits.setPlan(teamId, { maxDatasetSize: used + 50 });
    expect((await onA.post('/core/dataset/data/pushData', { collectionId, trainingMode: 'chunk', data: [item] })).body).toMatchObject({ statusText: 'datasetSizeNotEnough' });
    expect(await queued()).toBe(0);
    await a.app.teamLimits.setPlan(teamId, { maxDatasetSize: used + 51 });
    expect(await onA.ok(onA.post('/core/dataset/data/pushData', { collectionId, trainingMode: 'chunk', data: [item] }))).toEqual({ insertLen: 1, overToken: [], repeat: [], error: [] });
    await a.app.datasets.trainingWorker.drain();
    expect(await realCount()).toBe(used + 51);

    // Q/A pairs store two vectors each (q+a, and q alone); auto is trained as chunk.
    const pairs = [{ q: 'pair one?', a: 'one' }, { q: 'pair two?', a: 'two' }];
    await a.app.teamLimits.setPlan(teamId, { maxDatasetSize: used + 51 + 3 });
    expect((await onA.post('/core/dataset/data/pushData', { collectionId, trainingMode: 'auto', data: pairs })).body).toMatchObject({ statusText: 'datasetSizeNotEnough' });
    await a.app.teamLimits.setPlan(teamId, { maxDatasetSize: used + 51 + 4 });
    await onA.ok(onA.post('/core/dataset/data/pushData', { collectionId, trainingMode: 'auto', data: pairs }));
    await a.app.datasets.trainingWorker.drain();
    expect(await realCount()).toBe(used + 55);
    await a.app.teamLimits.setPlan(teamId, { maxDatasetSize: 1_000_000 });
  });

  it('sizes a CSV import by its Q/A pairs, two vectors each, before the collection is created', async () => {
    const datasetId = await onA.ok<string>(onA.post('/core/dataset/create', { name: `csv ${new ObjectId().toHexString()}` }));
    const body = multipart({ bucketName: 'dataset' }, { name: 'qa.csv', content: 'index,content\nWhat is A?,A is first\nWhat is B?,B is second\n', type: 'text/csv' });
    const uploaded = await a.app.inject({ method: 'POST', url: '/api/common/file/upload', headers: { ...authHeaders(token), ...body.headers }, payload: body.payload });
    const { fileId } = uploaded.json().data as { fileId: string };
    const used = await realCount();
    await a.app.teamLimits.setPlan(teamId, { maxDatasetSize: used + 3 });
    expect((await onA.post('/core/dataset/collection/create/csvTable', { datasetId, fileId })).body).toMatchObject({ statusText: 'datasetSizeNotEnough' });
    expect(await a.app.mongo.db.collection('dataset_collections').countDocuments({ datasetId: new ObjectId(datasetId) })).toBe(0);
    await a.app.teamLimits.setPlan(teamId, { maxDatasetSize: used + 4 });
    await onA.ok(onA.post('/core/dataset/collection/create/csvTable', { datasetId, fileId }));
    await a.app.datasets.trainingWorker.drain();
    expect(await realCount()).toBe(used + 4);
    await a.app.teamLimits.setPlan(teamId, { maxDatasetSize: 1_000_000 });
  });

  it('sizes data/update by the vectors it adds less those it replaces or removes; a refused one changes nothing', async () => {
    const dataId = await onA.ok<string>(onA.post('/core/dataset/data/insertData', { collectionId: await collection(), q: 'update me' }));
    const indexesOf = async () => (await onA.ok<{ indexes: { dataId: string; text: string }[] }>(onA.get('/core/dataset/data/detail', { id: dataId }))).indexes;
    const used = await realCount();
    await a.app.teamLimits.setPlan(teamId, { maxDatasetSize: used });
    const before = await indexesOf();
    const added = Array.from({ length: 50 }, (_, i) => ({ text: `added index ${i}` }));
    expect((await onA.put('/core/dataset/data/update', { dataId, q: 'update me', indexes: added })).body).toMatchObject({ statusText: 'datasetSizeNotEnough' });
    expect(await realCount()).toBe(used);
    expect(await indexesOf()).toEqual(before);
    // Replacing the default index (new q) adds nothing: a full plan takes it.
    await onA.ok(onA.put('/core/dataset/data/update', { dataId, q: 'updated' }));
    await a.app.teamLimits.setPlan(teamId, { maxDatasetSize: used + 1 });
    await onA.ok(onA.put('/core/dataset/data/update', { dataId, q: 'updated', indexes: [{ text: 'one more' }] }));
    // Two new indexes for the one dropped: one more vector, past the plan until it has room.
    const swap = { dataId, q: 'updated', indexes: [{ text: 'first new' }, { text: 'second new' }] };
    expect((await onA.put('/core/dataset/data/update', swap)).body).toMatchObject({ statusText: 'datasetSizeNotEnough' });
    await a.app.teamLimits.setPlan(teamId, { maxDatasetSize: used + 2 });
    await onA.ok(onA.put('/core/dataset/data/update', swap));
    expect(await realCount()).toBe(used + 2);
    await a.app.teamLimits.setPlan(teamId, { maxDatasetSize: 1_000_000 });
  });

  it('a counter unchecked for an hour is recounted behind a read; a team without one is counted in full', async () => {
    await counters().updateOne({ _id: `vectors:${teamId}` }, { $set: { count: 7777, reservedAt: new Date(0), checkedAt: new Date(Date.now() - 2 * 3600_000) } });
    expect(await planUsed(onA)).toBe(7777);
    const real = await realCount();
    await expect.poll(() => planUsed(onA)).toBe(real);

    await counters().deleteOne({ _id: `vectors:${teamId}` });
    expect(await planUsed(onB)).toBe(real);
    expect((await counters().findOne({ _id: `vectors:${teamId}` }))?.count).toBe(real);
  });
});
