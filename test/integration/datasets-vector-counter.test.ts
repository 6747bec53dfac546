/**
 * The plan's dataset size (stored vectors) comes from a per-team counter fed by every vector
 * write and delete, not from a count of the vectors (a scan of them all on FerretDB): the plan
 * page, the size check and every import read one small document. The counter follows inserts,
 * item deletes and collection deletes at once on every process, concurrent writes add up, and
 * drift (a crash between a write and its count) is corrected from the real count: before a
 * refusal, and once an hour behind a read.
 */
import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, client } from '../fixtures/datasets/client.js';
import { buildReplica, buildTestApp, type TestApp } from '../helpers/app.js';
import { commandsDuring } from '../helpers/command-counter.js';
import { createUser, login } from '../helpers/platform.js';

let a: TestApp;
let b: TestApp;
let teamId: string;
let onA: Client;
let onB: Client;

beforeAll(async () => {
  a = await buildTestApp();
  b = await buildReplica(a);
  teamId = (await createUser(a, { username: 'vectors-boss', password: 'password-1' })).teamId;
  const token = await login(a, 'vectors-boss', 'password-1');
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
