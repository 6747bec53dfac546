import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';
import { type Client, client } from '../fixtures/datasets/client.js';

/**
 * Dataset and collection trees: a move changes who can reach something, so moving a collection
 * needs manage; creates, moves and deletes racing on a folder never leave an orphan.
 */
let t: TestApp;
let owner: Client;
let writer: Client;

beforeAll(async () => {
  t = await buildTestApp();
  const a = await createUser(t, { username: 'tree-owner', password: 'password-a1' });
  await createUser(t, { username: 'tree-writer', password: 'password-b1', teamId: a.teamId, role: 'member' });
  owner = client(t, await login(t, 'tree-owner', 'password-a1'));
  writer = client(t, await login(t, 'tree-writer', 'password-b1'));
});

afterAll(async () => {
  await t?.close();
});

const collectionDoc = (id: string) => t.app.mongo.db.collection('dataset_collections').findOne({ _id: new ObjectId(id) });

describe('moving collections needs manage on the dataset', () => {
  let datasetId: string;
  let folderId: string;
  let collectionId: string;

  beforeAll(async () => {
    datasetId = await owner.ok<string>(owner.post('/core/dataset/create', { name: 'Shared' }));
    // Every team member may write the dataset, nobody but the owner manages it.
    await owner.ok(owner.put('/core/dataset/update', { id: datasetId, defaultPermission: 6 }));
    folderId = await owner.ok<string>(owner.post('/core/dataset/collection/create', { datasetId, name: 'Owner folder', type: 'folder' }));
    collectionId = await owner.ok<string>(owner.post('/core/dataset/collection/create', { datasetId, name: 'Owner notes' }));
  });

  it('refuses a write-only member moving a collection into a folder, and nothing changes', async () => {
    const before = await collectionDoc(collectionId);
    // The web client moves with PUT {id, parentId}.
    const refused = await writer.put('/core/dataset/collection/update', { id: collectionId, parentId: folderId });
    expect(refused.status).toBe(403);
    expect(refused.body.statusText).toBe('unAuthDataset');
    expect(refused.body.message).toContain('manage');
    expect(await collectionDoc(collectionId)).toEqual(before);
  });

  it("refuses moving into the member's own folder, or out of a folder to the root", async () => {
    const own = await writer.ok<string>(writer.post('/core/dataset/collection/create', { datasetId, name: 'Mine', type: 'folder' }));
    const intoOwn = await writer.post('/core/dataset/collection/update', { id: collectionId, parentId: own, name: 'renamed on the way' });
    expect(intoOwn.status).toBe(403);
    expect((await collectionDoc(collectionId))?.name).toBe('Owner notes');

    const inside = await owner.ok<string>(owner.post('/core/dataset/collection/create', { datasetId, name: 'Inside', parentId: folderId }));
    const toRoot = await writer.put('/core/dataset/collection/update', { id: inside, parentId: null });
    expect(toRoot.status).toBe(403);
    expect((await collectionDoc(inside))?.parentId?.toHexString()).toBe(folderId);
    const folderMove = await writer.put('/core/dataset/collection/update', { id: folderId, parentId: own });
    expect(folderMove.status).toBe(403);
    expect((await collectionDoc(folderId))?.parentId).toBeNull();
  });

  it('still lets the member rename (write) and a manager move', async () => {
    await writer.ok(writer.put('/core/dataset/collection/update', { id: collectionId, name: 'Renamed by writer' }));
    // Sending the current parent back is not a move.
    await writer.ok(writer.put('/core/dataset/collection/update', { id: collectionId, parentId: null, name: 'Renamed again' }));
    expect((await collectionDoc(collectionId))?.name).toBe('Renamed again');
    await owner.ok(owner.put('/core/dataset/collection/update', { id: collectionId, parentId: folderId }));
    expect((await collectionDoc(collectionId))?.parentId?.toHexString()).toBe(folderId);
    await owner.ok(owner.put('/core/dataset/update', { id: datasetId, defaultPermission: 7 }));
    await writer.ok(writer.put('/core/dataset/collection/update', { id: collectionId, parentId: null }));
    expect((await collectionDoc(collectionId))?.parentId).toBeNull();
  });
});

describe('racing a folder delete against creates and moves into it', () => {
  it('leaves no dataset pointing at a deleted dataset folder', async () => {
    const db = t.app.mongo.db;
    await owner.ok(owner.post('/core/dataset/folder/create', { name: 'Doomed folder' }));
    const folder = await db.collection('datasets').findOne({ name: 'Doomed folder' });
    const folderId = folder!._id.toHexString();
    const movers: string[] = [];
    for (let i = 0; i < 16; i++) movers.push(await owner.ok<string>(owner.post('/core/dataset/create', { name: `mover ${i}` })));

    const responses = await Promise.all([
      ...Array.from({ length: 16 }, (_, i) => owner.post('/core/dataset/create', { name: `created ${i}`, parentId: folderId })),
      ...movers.map((id) => owner.put('/core/dataset/update', { id, parentId: folderId })),
      owner.del('/core/dataset/delete', { id: folderId }),
    ]);
    // 409: the tree lock was busy for too long (a legitimate "try again"); never a 500.
    for (const response of responses) expect([200, 404, 409], response.raw).toContain(response.status);
    expect(responses.at(-1)?.status).toBe(200);

    const docs = await db.collection('datasets').find({ teamId: folder!.teamId }).toArray();
    const ids = new Set(docs.map((doc) => doc._id.toHexString()));
    const orphans = docs.filter((doc) => doc.parentId && !ids.has(doc.parentId.toHexString()));
    expect(orphans.map((doc) => doc.name)).toEqual([]);
    expect(ids.has(folderId)).toBe(false);
  });

  it('leaves no collection pointing at a deleted collection folder', async () => {
    const db = t.app.mongo.db;
    const datasetId = await owner.ok<string>(owner.post('/core/dataset/create', { name: 'Racing collections' }));
    const folderId = await owner.ok<string>(owner.post('/core/dataset/collection/create', { datasetId, name: 'Doomed', type: 'folder' }));
    const movers: string[] = [];
    for (let i = 0; i < 16; i++) movers.push(await owner.ok<string>(owner.post('/core/dataset/collection/create', { datasetId, name: `mover ${i}` })));

    const responses = await Promise.all([
      ...Array.from({ length: 8 }, (_, i) => owner.post('/core/dataset/collection/create', { datasetId, parentId: folderId, name: `folder ${i}`, type: 'folder' })),
      ...Array.from({ length: 8 }, (_, i) => owner.post('/core/dataset/collection/create/text', { datasetId, parentId: folderId, name: `text ${i}`, text: `Some text number ${i}.` })),
      ...movers.map((id) => owner.put('/core/dataset/collection/update', { id, parentId: folderId })),
      owner.del('/core/dataset/collection/delete', { id: folderId }),
    ]);
    for (const response of responses) expect([200, 400, 404, 409], response.raw).toContain(response.status);
    expect(responses.at(-1)?.status).toBe(200);

    const docs = await db.collection('dataset_collections').find({ datasetId: new ObjectId(datasetId) }).toArray();
    const ids = new Set(docs.map((doc) => doc._id.toHexString()));
    const orphans = docs.filter((doc) => doc.parentId && !ids.has(doc.parentId.toHexString()));
    expect(orphans.map((doc) => doc.name)).toEqual([]);
    expect(ids.has(folderId)).toBe(false);
    // Items queued for collections that went with the folder never become data.
    const collectionIds = [...ids].map((id) => new ObjectId(id));
    expect(await db.collection('dataset_datas').countDocuments({ datasetId: new ObjectId(datasetId), collectionId: { $nin: collectionIds } })).toBe(0);
  });

  it('leaves no collection in a dataset deleted while collections are created into it', async () => {
    const db = t.app.mongo.db;
    const datasetId = await owner.ok<string>(owner.post('/core/dataset/create', { name: 'Racing dataset' }));
    const responses = await Promise.all([
      ...Array.from({ length: 16 }, (_, i) => owner.post('/core/dataset/collection/create', { datasetId, name: `c ${i}` })),
      owner.del('/core/dataset/delete', { id: datasetId }),
    ]);
    for (const response of responses) expect([200, 404, 409], response.raw).toContain(response.status);
    expect(await db.collection('dataset_collections').countDocuments({ datasetId: new ObjectId(datasetId) })).toBe(0);
  });
});
