import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';
import { type Client, client } from '../fixtures/datasets/client.js';

/** The plan's dataset amount holds against parallel creates, and deletes give the room back. */
let t: TestApp;
let owner: Client;
let teamId: string;

beforeAll(async () => {
  t = await buildTestApp();
  ({ teamId } = await createUser(t, { username: 'limit-owner', password: 'password-a1' }));
  owner = client(t, await login(t, 'limit-owner', 'password-a1'));
  await t.app.teamLimits.setPlan(teamId, { maxDatasets: 4 });
});

afterAll(async () => {
  await t?.close();
});

const datasetCount = () => t.app.mongo.db.collection('datasets').countDocuments({ type: { $ne: 'folder' } });

describe('dataset amount of the plan', () => {
  it('30 parallel creates with maxDatasets 4 make exactly 4', async () => {
    const responses = await Promise.all(Array.from({ length: 30 }, (_, i) => owner.post('/core/dataset/create', { name: `parallel ${i}` })));
    expect(responses.filter((r) => r.status === 200)).toHaveLength(4);
    for (const refused of responses.filter((r) => r.status !== 200)) {
      expect(refused.status).toBe(403);
      expect(refused.body.statusText).toBe('datasetAmountNotEnough');
    }
    expect(await datasetCount()).toBe(4);
  });

  it('folders do not count; deleting a folder gives back the room of the datasets inside', async () => {
    await owner.ok(owner.post('/core/dataset/folder/create', { name: 'Folder' }));
    const folderId = (await owner.ok<{ _id: string; type: string }[]>(owner.post('/core/dataset/list', {}))).find((item) => item.type === 'folder')!._id;
    const listed = await owner.ok<{ _id: string; type: string }[]>(owner.post('/core/dataset/list', {}));
    const [first, second] = listed.filter((item) => item.type !== 'folder');
    await owner.ok(owner.put('/core/dataset/update', { id: first!._id, parentId: folderId }));
    await owner.ok(owner.put('/core/dataset/update', { id: second!._id, parentId: folderId }));
    expect((await owner.post('/core/dataset/create', { name: 'still full' })).status).toBe(403);

    await owner.ok(owner.del('/core/dataset/delete', { id: folderId }));
    expect(await datasetCount()).toBe(2);
    await owner.ok(owner.post('/core/dataset/create', { name: 'room 1' }));
    await owner.ok(owner.post('/core/dataset/create', { name: 'room 2' }));
    expect((await owner.post('/core/dataset/create', { name: 'full again' })).body.statusText).toBe('datasetAmountNotEnough');
    expect(await datasetCount()).toBe(4);
  });

  it('creates racing the delete of their folder leave the counter exact', async () => {
    await t.app.teamLimits.setPlan(teamId, { maxDatasets: 10 });
    await owner.ok(owner.post('/core/dataset/folder/create', { name: 'Short-lived' }));
    const folderId = (await owner.ok<{ _id: string; type: string }[]>(owner.post('/core/dataset/list', {}))).find((item) => item.type === 'folder')!._id;
    const responses = await Promise.all([
      ...Array.from({ length: 6 }, (_, i) => owner.post('/core/dataset/create', { name: `into ${i}`, parentId: folderId })),
      owner.del('/core/dataset/delete', { id: folderId }),
    ]);
    for (const response of responses) expect([200, 404, 409], response.raw).toContain(response.status);
    expect(await datasetCount()).toBe(4);
    // Every reservation was either used and released by the delete, or never made.
    for (let i = 0; i < 6; i++) await owner.ok(owner.post('/core/dataset/create', { name: `refill ${i}` }));
    expect((await owner.post('/core/dataset/create', { name: 'one too many' })).body.statusText).toBe('datasetAmountNotEnough');
    expect(await datasetCount()).toBe(10);
  });
});
