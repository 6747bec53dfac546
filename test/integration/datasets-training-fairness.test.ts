/**
 * The training queue is shared between teams: a claim takes the teams with queued items in turn
 * (one team's large import does not hold every other team's items back until it is trained), and
 * every read a claim makes is bounded (the items waiting out a retry's backoff are not all read).
 */
import { type CommandSucceededEvent, ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, client } from '../fixtures/datasets/client.js';
import { buildReplica, buildTestApp, type TestApp } from '../helpers/app.js';
import { commandsDuring } from '../helpers/command-counter.js';
import { createUser, login } from '../helpers/platform.js';

let t: TestApp;
let replica: TestApp;

beforeAll(async () => {
  t = await buildTestApp({ TRAINING_WORKER: 'false' });
  replica = await buildReplica(t);
});

afterAll(async () => {
  await replica?.close();
  await t?.close();
});

const repo = (app: TestApp = t) => app.app.datasets.ctx.repos.trainings;
const items = () => t.app.mongo.db.collection('dataset_trainings');

/** A user in a team of their own, with a dataset and a collection to push into. */
async function team(name: string) {
  const username = `${name}-${new ObjectId().toHexString().slice(-6)}`;
  const created = await createUser(t, { username, password: 'password-f1' });
  const api: Client = client(t, await login(t, username, 'password-f1'));
  const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name }));
  const collectionId = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name, type: 'virtual' }));
  const push = async (n: number) => {
    for (let at = 0; at < n; at += 200) {
      const data = Array.from({ length: Math.min(200, n - at) }, (_, i) => ({ q: `${name} item ${at + i}` }));
      await api.ok(api.post('/core/dataset/data/pushData', { collectionId, data }));
    }
  };
  return { teamId: created.teamId, collectionId, push };
}

/** Queued items left per team. */
async function queuedOf(teamIds: string[]): Promise<number[]> {
  return Promise.all(teamIds.map((teamId) => items().countDocuments({ teamId: new ObjectId(teamId) })));
}

describe('training queue fairness', () => {
  it('a team that queues after a large import is trained within the next batches, not after the import', async () => {
    const big = await team('importer');
    const small = await team('latecomer');
    await big.push(600);
    await small.push(10);
    // Two batches of 128: one for each team's turn (the latecomer's fills up with the importer's items).
    const worker = t.app.datasets.trainingWorker;
    expect(await worker.runOnce()).toBe(128);
    expect(await worker.runOnce()).toBe(128);
    expect(await queuedOf([small.teamId])).toEqual([0]);
    expect(await queuedOf([big.teamId])).toEqual([600 - (256 - 10)]);
    await worker.drain();
    expect(await queuedOf([big.teamId, small.teamId])).toEqual([0, 0]);
  });

  it('teams with large queues take a batch each in turn', async () => {
    const teams = [await team('alpha'), await team('beta'), await team('gamma')];
    for (const each of teams) await each.push(300);
    const worker = t.app.datasets.trainingWorker;
    for (let i = 0; i < 3; i++) expect(await worker.runOnce()).toBe(128);
    expect(await queuedOf(teams.map((each) => each.teamId))).toEqual([172, 172, 172]);
    await worker.drain();
  });

  it('two processes claiming at once never take the same item', async () => {
    const teams = [await team('left'), await team('right')];
    for (const each of teams) await each.push(150);
    const now = new Date();
    const [one, two] = await Promise.all([repo(t).claimBatch(now, 15_000, 64, 'worker-one'), repo(replica).claimBatch(now, 15_000, 64, 'worker-two')]);
    const ids = [...one, ...two].map((item) => item._id);
    expect(ids.length).toBeGreaterThan(0);
    expect(new Set(ids).size).toBe(ids.length);
    const claims = await t.app.mongo.db.collection('dataset_training_claims').find({ _id: { $in: ids.map((id) => new ObjectId(id)) } }).toArray();
    expect(claims).toHaveLength(ids.length);
    await repo(t).release(ids);
    await t.app.datasets.trainingWorker.drain();
  });

  it("a claim from one team's backlog reads the queue twice, as before: retries due, then the team's items", async () => {
    const solo = await team('solo');
    await solo.push(300);
    const first = await repo().claimBatch(new Date(), 15_000, 128, 'solo-worker');
    await repo().release(first.map((item) => item._id));
    let second: { _id: string }[] = [];
    const commands = await commandsDuring(t.app, async () => {
      second = await repo().claimBatch(new Date(), 15_000, 128, 'solo-worker');
    });
    expect(second).toHaveLength(128);
    expect(commands.filter((command) => command.name === 'find' && command.collection === 'dataset_trainings')).toHaveLength(2);
    await repo().release(second.map((item) => item._id));
    await t.app.datasets.trainingWorker.drain();
  });

  it('a claim reads at most a few batches of items, however many wait out a retry', async () => {
    const flaky = await team('flaky');
    await flaky.push(400);
    // All of them failed once and wait out their backoff (an hour from now).
    await items().updateMany({ teamId: new ObjectId(flaky.teamId) }, { $set: { failed: true, stopped: false, retryCount: 1, errorMsg: 'provider down', lockTime: new Date(Date.now() + 3_600_000) } });
    const fresh = await team('fresh');
    await fresh.push(5);

    let read = 0;
    const client = t.app.mongo.client;
    const count = (event: CommandSucceededEvent) => {
      const cursor = (event.reply as { cursor?: { ns?: string; firstBatch?: unknown[]; nextBatch?: unknown[] } }).cursor;
      if (cursor?.ns?.endsWith('.dataset_trainings')) read += (cursor.firstBatch ?? cursor.nextBatch ?? []).length;
    };
    client.on('commandSucceeded', count);
    let claimed: { _id: string; teamId: string }[];
    try {
      claimed = await repo().claimBatch(new Date(), 15_000, 5, 'bounded');
    } finally {
      client.off('commandSucceeded', count);
    }
    expect(claimed.map((item) => item.teamId)).toEqual(Array(5).fill(fresh.teamId));
    // Candidates are read twice the batch at most per read: retries due, then teams in turn, then the queue's head.
    expect(read).toBeLessThanOrEqual(4 * 2 * 5);
    await repo().release(claimed.map((item) => item._id));
    // Once their backoff has run out, the retried items are claimable again.
    expect(await repo().claimBatch(new Date(Date.now() + 2 * 3_600_000), 15_000, 5, 'later')).toHaveLength(5);
  });
});
