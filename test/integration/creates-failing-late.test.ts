import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, client } from '../fixtures/datasets/client.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';

/**
 * A create whose own write landed but whose check after it failed (a database error) answered an
 * error with the write kept: the client's retry (a 503 says "try again") made a second one. A
 * pushData queued, trained and billed its items twice; an app API key was stored with its secret
 * never shown, counting toward the key limit. Now the failing create takes its write back.
 */
let t: TestApp;
let api: Client;

beforeAll(async () => {
  t = await buildTestApp();
  await createUser(t, { username: 'late-fail', password: 'password-late-1' });
  api = client(t, await login(t, 'late-fail', 'password-late-1'));
});
afterAll(async () => {
  await t?.close();
});

const outage = () => Object.assign(new Error('connection reset'), { name: 'MongoNetworkError' });

/** The next call of `object[name]` fails as a database outage would; later calls run as before. */
function failOnce<T extends object>(object: T, name: keyof T): void {
  const original = object[name];
  (object as Record<keyof T, unknown>)[name] = async () => {
    (object as Record<keyof T, unknown>)[name] = original;
    throw outage();
  };
}

describe('a create failing after its write', () => {
  it('pushData: nothing stays queued, and the retry queues the items once', async () => {
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'late push' }));
    const collectionId = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'c', type: 'virtual' }));
    const queued = () => t.app.mongo.db.collection('dataset_trainings').countDocuments({ collectionId: new ObjectId(collectionId) });
    const push = () => api.post('/core/dataset/data/pushData', { collectionId, trainingMode: 'chunk', data: [{ q: 'What is the refund window?', a: '30 days' }] });

    // The deleted-dataset check that runs after the queue insert.
    failOnce(t.app.datasets.ctx.repos.datasets, 'existingIds');
    const failed = await push();
    expect(failed.status).toBeGreaterThanOrEqual(500);
    expect(await queued()).toBe(0);

    const retried = await push();
    expect(retried.status, retried.raw).toBe(200);
    expect(await queued()).toBe(1);
  });

  it('an app API key: the key is not stored, and the retry makes one key', async () => {
    const appId = await api.ok<string>(api.post('/core/app/create', { name: 'late key app', type: 'simple', modules: [], edges: [] }));
    // Key documents hold the app id as text.
    const keys = () => t.app.mongo.db.collection('openapis').countDocuments({ appId });

    failOnce(t.app.apps, 'confirmDependentWrite');
    const failed = await api.post('/support/openapi/create', { name: 'late', appId });
    expect(failed.status).toBeGreaterThanOrEqual(500);
    expect(await keys()).toBe(0);

    const retried = await api.post('/support/openapi/create', { name: 'late', appId });
    expect(retried.status, retried.raw).toBe(200);
    expect(await keys()).toBe(1);
  });
});
