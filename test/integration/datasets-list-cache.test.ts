import { LIST_STAMP_LEASE_MS } from '../../src/infra/version-stamps.js';
import { type Document, ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { escapeRegex } from '../../src/infra/mongo.js';
import { createVersionStamps } from '../../src/infra/version-stamps.js';
import type { ListedDataset } from '../../src/platform/datasets/datasets/dataset.repo.js';
import { createDatasetListReadModel, datasetListStampKey } from '../../src/platform/datasets/datasets/dataset-list.read-model.js';
import { modelView } from '../../src/platform/datasets/model-view.js';
import { plain } from '../../src/infra/plain-record.js';
import type { PermissionCaller } from '../../src/platform/permissions/index.js';
import { type Client, client } from '../fixtures/datasets/client.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { commandsDuring } from '../helpers/command-counter.js';
import { createUser, login } from '../helpers/platform.js';

let t: TestApp;
let teamId: string;
const callers: Record<'boss' | 'rita' | 'other', { api: Client; auth: PermissionCaller }> = {} as never;
const ids: Record<string, string> = {};

const ctx = () => t.app.datasets.ctx;

beforeAll(async () => {
  t = await buildTestApp({ PLAN_MAX_DATASETS: '1000' });
  const boss = await createUser(t, { username: 'list-boss', password: 'password-1' });
  teamId = boss.teamId;
  const rita = await createUser(t, { username: 'list-rita', password: 'password-1', teamId, role: 'member', permission: 4 });
  const other = await createUser(t, { username: 'list-other', password: 'password-1' });
  callers.boss = { api: client(t, await login(t, 'list-boss', 'password-1')), auth: { teamId, tmbId: boss.tmbId, role: 'owner', teamPermission: 0, isRoot: false } };
  callers.rita = { api: client(t, await login(t, 'list-rita', 'password-1')), auth: { teamId, tmbId: rita.tmbId, role: 'member', teamPermission: 4, isRoot: false } };
  callers.other = { api: client(t, await login(t, 'list-other', 'password-1')), auth: { teamId: other.teamId, tmbId: other.tmbId, role: 'owner', teamPermission: 0, isRoot: false } };
  const { api } = callers.boss;
  const create = (body: Record<string, unknown>) => api.ok<string>(api.post('/core/dataset/create', body));
  const folder = (body: Record<string, unknown>) => api.ok(api.post('/core/dataset/folder/create', body));

  await folder({ name: 'Shared folder' });
  await folder({ name: 'Private folder' });
  const folders = await api.ok<{ _id: string; name: string }[]>(api.post('/core/dataset/list', { type: 'folder' }));
  ids.shared = folders.find((f) => f.name === 'Shared folder')!._id;
  ids.private = folders.find((f) => f.name === 'Private folder')!._id;
  // Rita reads the shared folder as a collaborator; what inherits inside follows it.
  const sharedDoc = (await ctx().permissions.tree.findById(ids.shared))!;
  await ctx().permissions.updateCollaborators(callers.boss.auth, sharedDoc, [rita.tmbId], 4);

  ids.docs = await create({ name: 'Docs', intro: 'product docs' });
  ids.cpp = await create({ name: 'C++ (beta)', intro: 'Compiled DOCS' });
  await api.ok(api.post('/core/dataset/update', { id: ids.cpp, defaultPermission: 4 }));
  ids.inside = await create({ name: 'Inside shared', parentId: ids.shared });
  ids.hidden = await create({ name: 'Inside private', parentId: ids.private });
  await create({ name: 'Web', type: 'websiteDataset' });
  await callers.other.api.ok(callers.other.api.post('/core/dataset/create', { name: 'Docs of another team' }));

  // Imported documents: no parentId field (a root dataset for MongoDB), two updated at the same
  // instant, one never updated; written directly, so the stamp is bumped by hand.
  const base = { teamId: new ObjectId(teamId), tmbId: new ObjectId(boss.tmbId), avatar: '', intro: '', type: 'dataset', vectorModel: 'local-lexical-v1', agentModel: '', defaultPermission: 4 };
  const same = new Date('2024-01-01T00:00:00Z');
  await t.app.mongo.db.collection('datasets').insertMany([
    { ...base, name: 'legacy no parent', updateTime: same },
    { ...base, name: 'legacy twin', parentId: null, updateTime: same },
    { ...base, name: 'legacy never updated', parentId: null },
  ]);
  await ctx().datasetList.changed(teamId);
});

afterAll(() => t?.close());

type Query = { parentId?: string | null; type?: string | string[]; searchKey?: string };

/** What core/dataset/list answered before the read model: the former MongoDB query, judged by resolveMany. */
async function formerList(auth: PermissionCaller, input: Query) {
  const filter: Document = { teamId: new ObjectId(auth.teamId) };
  const searchKey = input.searchKey?.trim();
  const types = input.type === undefined ? undefined : [input.type].flat();
  if (searchKey) {
    const regex = new RegExp(escapeRegex(searchKey), 'i');
    filter.$or = [{ name: regex }, { intro: regex }];
  } else {
    if (types?.length) filter.type = { $in: types };
    // No parentId: no parent condition, the whole team (the reference's parseParentIdInMongo).
    if (input.parentId !== undefined) filter.parentId = input.parentId ? new ObjectId(input.parentId) : null;
  }
  const docs = await t.app.mongo.db.collection('datasets').find(filter).sort({ updateTime: -1, _id: -1 }).toArray();
  const items = docs.map((doc) => plain(doc) as unknown as ListedDataset);
  const resolved = await ctx().permissions.resolveMany(auth, items);
  return items.flatMap((item) => {
    const found = resolved.get(item._id);
    if (!found?.permission.hasReadPer) return [];
    return [
      {
        _id: item._id,
        parentId: item.parentId,
        avatar: item.avatar,
        name: item.name,
        intro: item.intro,
        type: item.type,
        permission: found.permission,
        vectorModel: modelView(ctx().models.getVectorModel(item.vectorModel), ctx().models.catalog.vectorModels[0], item.vectorModel),
        defaultPermission: found.defaultPermission,
        inheritPermission: item.inheritPermission !== false,
        tmbId: item.tmbId,
        updateTime: item.updateTime,
      },
    ];
  });
}

const dataOf = async (api: Client, query: Query) => {
  const response = await api.post('/core/dataset/list', query);
  expect(response.status, response.raw).toBe(200);
  return JSON.stringify(response.body.data);
};

describe('dataset list read model', () => {
  it('answers every query byte for byte as the former MongoDB query did (filters, order with ties, permissions)', async () => {
    const queries: Query[] = [
      {},
      { parentId: '' },
      { parentId: null },
      { parentId: ids.shared },
      { type: 'folder' },
      { type: ['dataset', 'folder'] },
      { type: [] },
      { type: 'websiteDataset' },
      { searchKey: 'docs' },
      { searchKey: 'DOCS' },
      { searchKey: 'c++ (B' },
      { searchKey: '.*' },
      { searchKey: '   ' },
      { searchKey: 'inside', parentId: ids.shared },
      { searchKey: 'legacy', type: 'folder' },
    ];
    for (const name of ['boss', 'rita'] as const) {
      const { api, auth } = callers[name];
      for (const query of queries) {
        expect(await dataOf(api, query), `${name} ${JSON.stringify(query)}`).toBe(JSON.stringify(await formerList(auth, query)));
      }
    }
    const root = JSON.parse(await dataOf(callers.boss.api, {})) as { name: string }[];
    expect(root.slice(-3).map((item) => item.name)).toEqual(['legacy twin', 'legacy no parent', 'legacy never updated']);
    const rita = JSON.parse(await dataOf(callers.rita.api, { searchKey: 'inside' })) as { name: string }[];
    expect(rita.map((item) => item.name)).toEqual(['Inside shared']);
  });

  it('answers allDataset as the former query did', async () => {
    for (const name of ['boss', 'rita'] as const) {
      const { api, auth } = callers[name];
      const all = await api.ok<{ _id: string }[]>(api.get('/core/dataset/allDataset'));
      // Every readable non-folder dataset of the team, newest first (the former unfiltered query).
      const docs = await t.app.mongo.db.collection('datasets').find({ teamId: new ObjectId(teamId), type: { $ne: 'folder' } }).sort({ updateTime: -1, _id: -1 }).toArray();
      const resolved = await ctx().permissions.resolveMany(auth, docs.map((doc) => plain(doc) as unknown as ListedDataset));
      const readable = docs.filter((doc) => resolved.get(doc._id.toHexString())?.permission.hasReadPer).map((doc) => doc._id.toHexString());
      expect(all.map((item) => item._id)).toEqual(readable);
      expect(readable.length).toBeGreaterThan(name === 'boss' ? 6 : 2);
    }
  });

  it('refuses folders exactly as before: missing, another team, not readable', async () => {
    const missing = await callers.boss.api.post('/core/dataset/list', { parentId: new ObjectId().toHexString() });
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ statusText: 'unExistDataset' });
    const foreign = await callers.other.api.post('/core/dataset/list', { parentId: ids.shared });
    expect(foreign.status).toBe(403);
    expect(foreign.body.message).toBe(`Dataset ${ids.shared} belongs to another team`);
    const closed = await callers.rita.api.post('/core/dataset/list', { parentId: ids.private });
    expect(closed.status).toBe(403);
    expect(closed.body.message).toBe(`read permission on dataset ${ids.private} is required`);
    const malformed = await callers.boss.api.post('/core/dataset/list', { parentId: 'nope' });
    expect(malformed.status).toBe(400);
  });

  it("never shows another team's datasets, whichever team was cached first", async () => {
    await dataOf(callers.boss.api, { searchKey: 'docs' });
    const other = JSON.parse(await dataOf(callers.other.api, { searchKey: 'docs' })) as { name: string }[];
    expect(other.map((item) => item.name)).toEqual(['Docs of another team']);
    const mine = JSON.parse(await dataOf(callers.boss.api, { searchKey: 'docs' })) as { name: string }[];
    expect(mine.map((item) => item.name)).not.toContain('Docs of another team');
    const all = await callers.other.api.ok<{ name: string }[]>(callers.other.api.get('/core/dataset/allDataset'));
    expect(all.map((item) => item.name)).toEqual(['Docs of another team']);
  });

  it('a repeated list reads only its team stamp: no datasets, no permission rows', async () => {
    for (const [name, body] of [
      ['rita', {}],
      ['rita', { parentId: ids.shared }],
      ['boss', { searchKey: 'docs' }],
      ['boss', { type: ['dataset'] }],
    ] as const) {
      const { api } = callers[name];
      const first = await api.post('/core/dataset/list', body);
      let second = first;
      // Past the stamp's lease, so the repeated list reads it once (inside the lease, not at all).
      await new Promise((resolve) => setTimeout(resolve, LIST_STAMP_LEASE_MS + 20));
      const commands = await commandsDuring(t.app, async () => {
        second = await api.post('/core/dataset/list', body);
      });
      expect(second.raw).toBe(first.raw);
      const label = `${name} ${JSON.stringify(body)}`;
      // The team's stamp by _id; authentication may add its epoch read, nothing else is read.
      expect(commands.filter((c) => c.key === datasetListStampKey(teamId)), label).toEqual([{ name: 'find', collection: 'version_stamps', key: datasetListStampKey(teamId) }]);
      expect(commands.filter((c) => c.collection !== 'version_stamps'), label).toEqual([]);
    }
    const all = await commandsDuring(t.app, () => callers.rita.api.get('/core/dataset/allDataset'));
    expect(all.filter((c) => c.collection !== 'version_stamps')).toEqual([]);
  });

  it('loads again after a write: the datasets and the permission rows, once', async () => {
    await callers.boss.api.ok(callers.boss.api.post('/core/dataset/update', { id: ids.docs, intro: 'product docs, revised' }));
    const cold = await commandsDuring(t.app, () => callers.rita.api.post('/core/dataset/list', {}));
    const loads = cold.filter((c) => c.collection !== 'version_stamps');
    expect(loads).toHaveLength(2);
    expect(loads).toEqual(expect.arrayContaining([{ name: 'find', collection: 'datasets' }, { name: 'find', collection: 'resource_permissions' }]));
    const warm = await commandsDuring(t.app, () => callers.rita.api.post('/core/dataset/list', {}));
    expect(warm.filter((c) => c.collection !== 'version_stamps')).toEqual([]);
  });
});

describe('read model policy', () => {
  it('keeps at most maxTeams teams (least recently used go first) and reloads a list older than maxAgeMs', async () => {
    let clock = 0;
    const loaded: string[] = [];
    const model = createDatasetListReadModel({
      stamps: createVersionStamps(t.app.mongo.db, { leaseMs: 0 }),
      load: async (team) => {
        loaded.push(team);
        return { datasets: [], rows: new Map() };
      },
      toResource: ctx().permissions.toResource,
      maxTeams: 2,
      maxAgeMs: 1000,
      now: () => clock,
    });
    const [a, b, c] = [new ObjectId(), new ObjectId(), new ObjectId()].map((id) => id.toHexString()) as [string, string, string];
    await model.team(a);
    await model.team(b);
    await model.team(a);
    expect(loaded).toEqual([a, b]);
    await model.team(c); // b is the least recently used
    expect(model.size()).toBe(2);
    await model.team(a);
    await model.team(b);
    expect(loaded).toEqual([a, b, c, b]);
    clock = 5000;
    await model.team(b);
    expect(loaded).toEqual([a, b, c, b, b]);
    await model.changed(b);
    await model.team(b);
    expect(loaded).toEqual([a, b, c, b, b, b]);
  });
});
