import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { type Client, client, multipart } from '../fixtures/datasets/client.js';

/** Every delete cascade of the datasets module touches the deleting team's records only. */
let t: TestApp;
let alice: Client;
let bob: Client;
let aliceToken: string;
let bobToken: string;
let bobTeam: string;

const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');

beforeAll(async () => {
  t = await buildTestApp();
  await createUser(t, { username: 'cascade-alice', password: 'password-a1' });
  ({ teamId: bobTeam } = await createUser(t, { username: 'cascade-bob', password: 'password-b1' }));
  aliceToken = await login(t, 'cascade-alice', 'password-a1');
  bobToken = await login(t, 'cascade-bob', 'password-b1');
  alice = client(t, aliceToken);
  bob = client(t, bobToken);
});

afterAll(async () => {
  await t?.close();
});

async function upload(token: string, name: string, content: string): Promise<string> {
  const body = multipart({ bucketName: 'dataset' }, { name, content, type: 'text/plain' });
  const response = await t.app.inject({ method: 'POST', url: '/api/common/file/upload', headers: { ...authHeaders(token), ...body.headers }, payload: body.payload });
  expect(response.statusCode, response.body).toBe(200);
  return response.json().data.fileId as string;
}

const fileExists = async (id: string) => (await t.app.mongo.db.collection('dataset.files').countDocuments({ _id: new ObjectId(id) })) === 1;

describe('dataset and collection deletes filter by team', () => {
  it("a collection whose fileId is also another team's file leaves that file alone", async () => {
    const bobFile = await upload(bobToken, 'bob.txt', 'Bob keeps this file.');
    const datasetId = await alice.ok<string>(alice.post('/core/dataset/create', { name: 'Alice files' }));
    const aliceFile = await upload(aliceToken, 'alice.txt', 'Alice text for a collection.');
    const { collectionId } = await alice.ok<{ collectionId: string }>(alice.post('/core/dataset/collection/create/fileId', { datasetId, fileId: aliceFile }));
    // Ids shared across teams (a restored backup, a migrated record): the collection names Bob's file.
    await t.app.mongo.db.collection('dataset_collections').updateOne({ _id: new ObjectId(collectionId) }, { $set: { fileId: new ObjectId(bobFile) } });

    await alice.ok(alice.del('/core/dataset/delete', { id: datasetId }));
    expect(await fileExists(bobFile)).toBe(true);
    const read = await bob.ok<{ previewContent: string }>(bob.post('/common/file/previewContent', { type: 'fileLocal', sourceId: bobFile }));
    expect(read.previewContent).toBe('Bob keeps this file.');
  });

  it('a file used by two collections stays until the last one goes', async () => {
    const datasetId = await alice.ok<string>(alice.post('/core/dataset/create', { name: 'Shared file' }));
    const fileId = await upload(aliceToken, 'shared.txt', 'One file, imported twice.');
    const first = await alice.ok<{ collectionId: string }>(alice.post('/core/dataset/collection/create/fileId', { datasetId, fileId }));
    const second = await alice.ok<{ collectionId: string }>(alice.post('/core/dataset/collection/create/fileId', { datasetId, fileId }));
    await alice.ok(alice.del('/core/dataset/collection/delete', { id: first.collectionId }));
    expect(await fileExists(fileId)).toBe(true);
    const link = await alice.ok<{ value: string }>(alice.get('/core/dataset/collection/read', { collectionId: second.collectionId }));
    expect((await t.app.inject({ method: 'GET', url: link.value })).body).toBe('One file, imported twice.');
    await alice.ok(alice.del('/core/dataset/collection/delete', { id: second.collectionId }));
    expect(await fileExists(fileId)).toBe(false);
  });

  it('a file images go with the file only: not with a collection naming them in its metadata, not while another import uses the file', async () => {
    const datasetId = await alice.ok<string>(alice.post('/core/dataset/create', { name: 'Alice pictures' }));
    const fileId = await upload(aliceToken, 'pictures.txt', 'A document with pictures.');
    const image = await alice.ok<string>(alice.post('/common/file/uploadImage', { base64Img: `data:image/png;base64,${PNG.toString('base64')}`, metadata: { relatedId: fileId } }));
    const imageServed = async () => (await t.app.inject({ method: 'GET', url: image })).statusCode === 200;
    const first = await alice.ok<{ collectionId: string }>(alice.post('/core/dataset/collection/create/fileId', { datasetId, fileId }));
    const second = await alice.ok<{ collectionId: string }>(alice.post('/core/dataset/collection/create/fileId', { datasetId, fileId }));
    // A collection whose metadata names the file: its delete is no delete of the file's images.
    const naming = await alice.ok<string>(alice.post('/core/dataset/collection/create', { datasetId, name: 'names it', metadata: { relatedImgId: fileId } }));
    await alice.ok(alice.del('/core/dataset/collection/delete', { id: naming }));
    expect(await imageServed()).toBe(true);
    await alice.ok(alice.del('/core/dataset/collection/delete', { id: first.collectionId }));
    expect(await imageServed()).toBe(true);
    await alice.ok(alice.del('/core/dataset/collection/delete', { id: second.collectionId }));
    expect(await imageServed()).toBe(false);
    expect(await fileExists(fileId)).toBe(false);
  });

  it("another team's images, data, vectors, queue items and collections sharing the ids survive", async () => {
    const db = t.app.mongo.db;
    const datasetId = await alice.ok<string>(alice.post('/core/dataset/create', { name: 'Alice content' }));
    const fileId = await upload(aliceToken, 'content.txt', 'Alpha paragraph.\n\nBeta paragraph.');
    const { collectionId } = await alice.ok<{ collectionId: string }>(alice.post('/core/dataset/collection/create/fileId', { datasetId, fileId }));
    await t.app.datasets.trainingWorker.drain();
    await alice.ok(alice.post('/core/dataset/data/pushData', { collectionId, data: [{ q: 'still queued' }] }));

    // Bob's image is tagged with the id Alice's collection uses for its related images.
    const bobImage = await bob.ok<string>(bob.post('/common/file/uploadImage', { base64Img: `data:image/png;base64,${PNG.toString('base64')}`, metadata: { relatedId: fileId } }));
    // Bob's records sharing Alice's dataset and collection ids.
    const bobTeamId = new ObjectId(bobTeam);
    const copies: Record<string, number> = {};
    for (const name of ['dataset_collections', 'dataset_datas', 'dataset_vectors', 'dataset_trainings']) {
      const docs = await db.collection(name).find({ datasetId: new ObjectId(datasetId) }).toArray();
      expect(docs.length, name).toBeGreaterThan(0);
      const ids = name === 'dataset_vectors' ? docs.map((doc) => `${doc._id}-bob`) : docs.map(() => new ObjectId());
      await db.collection(name).insertMany(docs.map((doc, i) => ({ ...doc, _id: ids[i], teamId: bobTeamId })) as never[]);
      copies[name] = docs.length;
    }

    await alice.ok(alice.del('/core/dataset/delete', { id: datasetId }));
    for (const [name, count] of Object.entries(copies)) {
      expect(await db.collection(name).countDocuments({ datasetId: new ObjectId(datasetId), teamId: bobTeamId }), name).toBe(count);
      expect(await db.collection(name).countDocuments({ datasetId: new ObjectId(datasetId), teamId: { $ne: bobTeamId } }), name).toBe(0);
    }
    expect((await t.app.inject({ method: 'GET', url: bobImage })).statusCode).toBe(200);
    expect(await fileExists(fileId)).toBe(false);
  });
});
