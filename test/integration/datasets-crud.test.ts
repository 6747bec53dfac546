import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';
import { type Client, client } from '../fixtures/datasets/client.js';

let t: TestApp;
let owner: Client;
let member: Client;
let stranger: Client;
let ownerTeamId: string;

beforeAll(async () => {
  t = await buildTestApp({ PLAN_MAX_DATASETS: '6' });
  const a = await createUser(t, { username: 'ds-owner', password: 'password-a1' });
  ownerTeamId = a.teamId;
  await createUser(t, { username: 'ds-member', password: 'password-b1', teamId: a.teamId, role: 'member' });
  await createUser(t, { username: 'ds-stranger', password: 'password-c1' });
  owner = client(t, await login(t, 'ds-owner', 'password-a1'));
  member = client(t, await login(t, 'ds-member', 'password-b1'));
  stranger = client(t, await login(t, 'ds-stranger', 'password-c1'));
});

afterAll(async () => {
  await t?.close();
});

describe('datasets and folders', () => {
  let folderId: string;
  let datasetId: string;

  it('creates a dataset with the default local vector model', async () => {
    datasetId = await owner.ok<string>(owner.post('/core/dataset/create', { name: 'Docs', intro: 'product docs' }));
    expect(datasetId).toMatch(/^[0-9a-f]{24}$/);
    const detail = await owner.ok<Record<string, unknown>>(owner.get('/core/dataset/detail', { id: datasetId }));
    expect(detail).toMatchObject({
      _id: datasetId,
      name: 'Docs',
      intro: 'product docs',
      type: 'dataset',
      status: 'active',
      parentId: null,
      defaultPermission: 0,
      inheritPermission: true,
      vectorModel: { model: 'local-lexical-v1' },
      permission: { isOwner: true, hasManagePer: true, hasWritePer: true, hasReadPer: true },
    });
    expect(JSON.stringify(detail)).not.toContain('requestAuth');
  });

  it('refuses an unknown vector model and bad names, writing nothing', async () => {
    const before = await owner.ok<unknown[]>(owner.get('/core/dataset/allDataset'));
    const unknown = await owner.post('/core/dataset/create', { name: 'X', vectorModel: 'no-such-model' });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({ code: 501007, statusText: 'invalidVectorModelOrQAModel' });
    const empty = await owner.post('/core/dataset/create', { name: '' });
    expect(empty.status).toBe(400);
    expect(empty.body.message).toContain('name');
    expect(await owner.ok<unknown[]>(owner.get('/core/dataset/allDataset'))).toHaveLength(before.length);
  });

  it('creates folders, lists by parent, and gives breadcrumbs', async () => {
    expect(await owner.ok(owner.post('/core/dataset/folder/create', { name: 'Team folder' }))).toEqual({});
    const root = await owner.ok<{ _id: string; type: string; name: string }[]>(owner.post('/core/dataset/list', { parentId: null }));
    const folder = root.find((item) => item.type === 'folder');
    expect(folder?.name).toBe('Team folder');
    folderId = folder!._id;
    const inner = await owner.ok<string>(owner.post('/core/dataset/create', { name: 'Inner', parentId: folderId }));
    const listed = await owner.ok<{ _id: string }[]>(owner.post('/core/dataset/list', { parentId: folderId }));
    expect(listed.map((item) => item._id)).toEqual([inner]);
    expect(await owner.ok(owner.get('/core/dataset/paths', { parentId: folderId }))).toEqual([{ parentId: folderId, parentName: 'Team folder' }]);
    expect(await owner.ok(owner.get('/core/dataset/paths'))).toEqual([]);
    const searched = await owner.ok<{ name: string }[]>(owner.post('/core/dataset/list', { searchKey: 'inn' }));
    expect(searched.map((item) => item.name)).toEqual(['Inner']);
    // No parentId at all lists the whole team (the reference leaves the field out of its query); null or '' the root.
    const everything = await owner.ok<{ _id: string }[]>(owner.post('/core/dataset/list', {}));
    expect(everything.map((item) => item._id)).toContain(inner);
    expect(everything.map((item) => item._id)).toContain(folderId);
    for (const parentId of [null, '']) {
      const rootOnly = await owner.ok<{ _id: string }[]>(owner.post('/core/dataset/list', { parentId }));
      expect(rootOnly.map((item) => item._id)).not.toContain(inner);
    }
    // Filters sent as null (API scripts do) filter nothing; a blank search key is no search.
    const nulls = await owner.ok<{ _id: string }[]>(owner.post('/core/dataset/list', { parentId: folderId, type: null, searchKey: null }));
    expect(nulls.map((item) => item._id)).toEqual([inner]);
    const blank = await owner.ok<{ _id: string }[]>(owner.post('/core/dataset/list', { parentId: folderId, searchKey: '  ' }));
    expect(blank.map((item) => item._id)).toEqual([inner]);
  });

  it('an invalid default permission, or one changed in the same request as a move, is a 400 before anything moves', async () => {
    await owner.ok(owner.post('/core/dataset/folder/create', { name: 'Target folder' }));
    const root = await owner.ok<{ _id: string; name: string }[]>(owner.post('/core/dataset/list', { parentId: null }));
    const target = root.find((item) => item.name === 'Target folder')!._id;
    const moved = await owner.ok<string>(owner.post('/core/dataset/create', { name: 'Stays put' }));
    for (const payload of [{ parentId: target, defaultPermission: 5 }, { parentId: target, defaultPermission: 4, name: 'renamed' }]) {
      const update = await owner.post('/core/dataset/update', { id: moved, ...payload });
      expect(update.status, JSON.stringify(update.body)).toBe(400);
      expect(update.body.message).toMatch(/^Invalid field 'defaultPermission'/);
    }
    const detail = await owner.ok<{ parentId: string | null; name: string; defaultPermission: number }>(owner.get('/core/dataset/detail', { id: moved }));
    expect(detail).toMatchObject({ parentId: null, name: 'Stays put', defaultPermission: 0 });
    await owner.ok(owner.post('/core/dataset/delete', { id: moved }));
  });

  it('a folder whose inherited collaborators cannot be written is not left behind; a retry makes it whole', async () => {
    await owner.ok(owner.post('/core/dataset/folder/create', { name: 'Shared parent' }));
    const root = await owner.ok<{ _id: string; name: string }[]>(owner.post('/core/dataset/list', { parentId: null }));
    const parent = root.find((item) => item.name === 'Shared parent')!._id;
    const memberTmbId = String((await t.app.mongo.db.collection('team_members').findOne({ teamId: new ObjectId(ownerTeamId), role: 'member' }))?._id);
    const permissions = t.app.datasets.ctx.permissions;
    await permissions.writeCollaborators(ownerTeamId, parent, [{ tmbId: memberTmbId, permission: 6 }]);
    const spy = vi.spyOn(permissions, 'writeCollaborators').mockRejectedValueOnce(new Error('the database went away'));
    const failed = await owner.post('/core/dataset/folder/create', { name: 'Half made', parentId: parent });
    spy.mockRestore();
    expect(failed.status).toBeGreaterThanOrEqual(500);
    expect(await t.app.mongo.db.collection('datasets').countDocuments({ name: 'Half made' })).toBe(0);
    // A retry makes it whole, with the parent's collaborator.
    await owner.ok(owner.post('/core/dataset/folder/create', { name: 'Half made', parentId: parent }));
    const made = await t.app.mongo.db.collection('datasets').findOne({ name: 'Half made' });
    expect(await t.app.mongo.db.collection('resource_permissions').countDocuments({ resourceId: made!._id, tmbId: new ObjectId(memberTmbId) })).toBe(1);
  });

  it('shows a model the configuration no longer has as the first configured one (the web client reads its fields)', async () => {
    const retired = await owner.ok<string>(owner.post('/core/dataset/create', { name: 'Retired models' }));
    await t.app.datasets.ctx.repos.datasets.update(ownerTeamId, retired, { vectorModel: 'retired-embedding', agentModel: 'retired-llm' });
    const detail = await owner.ok<{ vectorModel: Record<string, unknown>; agentModel: Record<string, unknown> }>(owner.get('/core/dataset/detail', { id: retired }));
    const models = t.app.models.catalog;
    expect(detail.vectorModel).toMatchObject({ model: models.vectorModels[0]!.model, maxToken: models.vectorModels[0]!.maxToken });
    expect(detail.agentModel).toMatchObject({ model: models.llmModels[0]!.model, maxContext: models.llmModels[0]!.maxContext });
    expect(JSON.stringify(detail)).not.toMatch(/requestAuth|requestUrl/);
    const listed = await owner.ok<{ _id: string; vectorModel: { model: string } }[]>(owner.post('/core/dataset/list', {}));
    expect(listed.find((item) => item._id === retired)?.vectorModel.model).toBe(models.vectorModels[0]!.model);
    await owner.ok(owner.post('/core/dataset/delete', { id: retired }));
  });

  it('updates fields and moves into a folder (documented PUT and client POST)', async () => {
    await owner.ok(owner.put('/core/dataset/update', { id: datasetId, name: 'Docs v2', intro: '' }));
    await owner.ok(owner.post('/core/dataset/update', { id: datasetId, parentId: folderId }));
    const detail = await owner.ok<{ name: string; intro: string; parentId: string }>(owner.get('/core/dataset/detail', { id: datasetId }));
    expect(detail).toMatchObject({ name: 'Docs v2', intro: '', parentId: folderId });
    const intoDataset = await owner.put('/core/dataset/update', { id: folderId, parentId: datasetId });
    expect(intoDataset.status).toBe(400);
    const intoItself = await owner.put('/core/dataset/update', { id: folderId, parentId: folderId });
    expect(intoItself.status).toBe(400);
    await owner.ok(owner.put('/core/dataset/update', { id: datasetId, parentId: null }));
  });

  it('shares through the default permission, and resumes inheritance', async () => {
    expect((await member.get('/core/dataset/detail', { id: datasetId })).status).toBe(403);
    await owner.ok(owner.put('/core/dataset/update', { id: datasetId, defaultPermission: 4 }));
    const seen = await member.ok<{ permission: { hasReadPer: boolean; hasWritePer: boolean } }>(member.get('/core/dataset/detail', { id: datasetId }));
    expect(seen.permission).toMatchObject({ hasReadPer: true, hasWritePer: false });
    const write = await member.put('/core/dataset/update', { id: datasetId, name: 'mine' });
    expect(write.status).toBe(403);
    expect(write.body.statusText).toBe('unAuthDataset');
    // Inside a folder, a broken inheritance can be resumed.
    await owner.ok(owner.put('/core/dataset/update', { id: datasetId, parentId: folderId }));
    await owner.ok(owner.put('/core/dataset/update', { id: datasetId, defaultPermission: 6 }));
    expect((await owner.ok<{ inheritPermission: boolean }>(owner.get('/core/dataset/detail', { id: datasetId }))).inheritPermission).toBe(false);
    await owner.ok(owner.get('/core/dataset/resumeInheritPermission', { datasetId }));
    const resumed = await owner.ok<{ inheritPermission: boolean; defaultPermission: number }>(owner.get('/core/dataset/detail', { id: datasetId }));
    expect(resumed).toMatchObject({ inheritPermission: true, defaultPermission: 0 });
    expect((await member.get('/core/dataset/detail', { id: datasetId })).status).toBe(403);
  });

  it("refuses another team's dataset and changes nothing", async () => {
    for (const response of [
      await stranger.get('/core/dataset/detail', { id: datasetId }),
      await stranger.put('/core/dataset/update', { id: datasetId, name: 'stolen' }),
      await stranger.del('/core/dataset/delete', { id: datasetId }),
      await stranger.post('/core/dataset/collection/create/text', { datasetId, name: 'x', text: 'hello' }),
      await stranger.post('/core/dataset/searchTest', { datasetId, text: 'hello' }),
    ]) {
      expect(response.status).toBe(403);
      expect(response.body.statusText).toBe('unAuthDataset');
    }
    const collectionId = await owner.ok<string>(owner.post('/core/dataset/collection/create', { datasetId, name: 'private', type: 'virtual' }));
    const dataId = await owner.ok<string>(owner.post('/core/dataset/data/insertData', { collectionId, q: 'secret item' }));
    for (const response of [
      await stranger.get('/core/dataset/collection/detail', { id: collectionId }),
      await stranger.post('/core/dataset/collection/update', { id: collectionId, name: 'x' }),
      await stranger.del('/core/dataset/collection/delete', { id: collectionId }),
      await stranger.post('/core/dataset/data/list', { collectionId }),
      await stranger.post('/core/dataset/data/pushData', { collectionId, data: [{ q: 'injected' }] }),
      await stranger.get('/core/dataset/data/detail', { id: dataId }),
      await stranger.put('/core/dataset/data/update', { dataId, q: 'changed' }),
      await stranger.del('/core/dataset/data/delete', { id: dataId }),
    ]) {
      expect(response.status).toBe(403);
      expect(response.body.statusText).toBe('unAuthDataset');
    }
    expect((await owner.ok<{ q: string }>(owner.get('/core/dataset/data/detail', { id: dataId }))).q).toBe('secret item');
    await owner.ok(owner.del('/core/dataset/collection/delete', { id: collectionId }));
    expect(await stranger.ok(stranger.get('/core/dataset/allDataset'))).toEqual([]);
    expect((await owner.ok<{ name: string }>(owner.get('/core/dataset/detail', { id: datasetId }))).name).toBe('Docs v2');
  });

  it('refuses a link to a private address (SSRF guard) and creates nothing', async () => {
    const response = await owner.post('/core/dataset/collection/create/link', { datasetId, link: 'http://127.0.0.1:9/admin' });
    expect(response.status).toBe(400);
    expect(response.body.message).toContain('link');
    const list = await owner.ok<{ total: number }>(owner.get('/core/dataset/collection/scrollList', { datasetId }));
    expect(list.total).toBe(0);
  });

  it('answers 404 for a missing dataset and 400 for a malformed id', async () => {
    const missing = await owner.get('/core/dataset/detail', { id: '0123456789abcdef01234567' });
    expect(missing.status).toBe(404);
    expect(missing.body.statusText).toBe('unExistDataset');
    const malformed = await owner.get('/core/dataset/detail', { id: 'nope' });
    expect(malformed.status).toBe(400);
    expect(malformed.body.message).toContain('id');
  });

  it('deletes a dataset with all its content (owner only)', async () => {
    const id = await owner.ok<string>(owner.post('/core/dataset/create', { name: 'Doomed' }));
    await owner.ok(owner.put('/core/dataset/update', { id, defaultPermission: 7 }));
    const created = await owner.ok<{ collectionId: string }>(owner.post('/core/dataset/collection/create/text', { datasetId: id, name: 'text', text: 'Alpha beta gamma.\n\nDelta epsilon.' }));
    await owner.ok(owner.post('/core/dataset/data/insertData', { collectionId: created.collectionId, q: 'manual item', a: 'answer' }));
    expect((await member.del('/core/dataset/delete', { id })).status).toBe(403);
    await owner.ok(owner.del('/core/dataset/delete', { id }));
    const db = t.app.mongo.db;
    for (const name of ['dataset_collections', 'dataset_datas', 'dataset_trainings', 'dataset_vectors']) {
      expect(await db.collection(name).countDocuments({ datasetId: new ObjectId(id) }), name).toBe(0);
    }
    expect(await db.collection('resource_permissions').countDocuments({ resourceId: new ObjectId(id) })).toBe(0);
    expect((await owner.get('/core/dataset/detail', { id })).status).toBe(404);
  });

  it('enforces the dataset amount of the plan', async () => {
    const existing = (await owner.ok<unknown[]>(owner.get('/core/dataset/allDataset'))).length;
    const results: number[] = [];
    for (let i = existing; i < 7; i++) results.push((await owner.post('/core/dataset/create', { name: `n${i}` })).status);
    expect(results.at(-1)).toBe(403);
    const refused = await owner.post('/core/dataset/create', { name: 'one too many' });
    expect(refused.body.statusText).toBe('datasetAmountNotEnough');
    expect((await owner.ok<unknown[]>(owner.get('/core/dataset/allDataset'))).length).toBe(6);
  });
});
