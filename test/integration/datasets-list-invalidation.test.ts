import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { finishDatasetDeletions } from '../../src/platform/datasets/cascade.js';
import type { PermissionCaller } from '../../src/platform/permissions/index.js';
import { type Client, client } from '../fixtures/datasets/client.js';
import { buildReplica, buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';

/**
 * Every write that changes what a dataset list shows, or what a caller may see in it, is seen by
 * the next list at once: on the process that wrote (its read model) and on a second process on
 * the same database (its own read model, checked against the team's stamp). Both lists are read
 * before each write, so a write that forgot to bump would be answered from a stale cache.
 */

let first: TestApp;
let second: TestApp;
let boss: PermissionCaller;
let ritaTmbId: string;
const views: { name: string; boss: Client; rita: Client }[] = [];

beforeAll(async () => {
  const dir = await mkdtemp(join(tmpdir(), 'ds-list-'));
  const configPath = join(dir, 'config.json');
  const lexical = { provider: 'local-lexical', defaultToken: 512, maxToken: 3000, weight: 100 };
  await writeFile(
    configPath,
    JSON.stringify({ vectorModels: [{ ...lexical, model: 'local-lexical-v1', name: 'Lexical' }, { ...lexical, model: 'lexical-b', name: 'Lexical B' }] }),
  );
  first = await buildTestApp({ MODEL_CONFIG_PATH: configPath, PLAN_MAX_DATASETS: '1000' });
  second = await buildReplica(first, { MODEL_CONFIG_PATH: configPath });
  const owner = await createUser(first, { username: 'inv-boss', password: 'password-1' });
  const rita = await createUser(first, { username: 'inv-rita', password: 'password-1', teamId: owner.teamId, role: 'member', permission: 4 });
  boss = { teamId: owner.teamId, tmbId: owner.tmbId, role: 'owner', teamPermission: 0, isRoot: false };
  ritaTmbId = rita.tmbId;
  const bossToken = await login(first, 'inv-boss', 'password-1');
  const ritaToken = await login(first, 'inv-rita', 'password-1');
  for (const [name, t] of [
    ['writing process', first],
    ['second process', second],
  ] as const) {
    views.push({ name, boss: client(t, bossToken), rita: client(t, ritaToken) });
  }
});

afterAll(async () => {
  await second?.close();
  await first?.close();
});

const writer = () => views[0]!.boss;
const ctx = () => first.app.datasets.ctx;

type Listed = { _id: string; name: string; intro: string; avatar: string; parentId: string | null; vectorModel: { model: string }; permission: { value: number } };
/** The root list unless a parent is named (no parentId at all would list the whole team). */
const list = (api: Client, query: Record<string, unknown> = {}) => api.ok<Listed[]>(api.post('/core/dataset/list', { parentId: null, ...query }));
const all = (api: Client) => api.ok<{ _id: string; name: string }[]>(api.get('/core/dataset/allDataset'));
const create = (body: Record<string, unknown>) => writer().ok<string>(writer().post('/core/dataset/create', body));
async function folder(name: string, parentId?: string): Promise<string> {
  await writer().ok(writer().post('/core/dataset/folder/create', { name, parentId }));
  const found = (await list(writer(), { parentId: parentId ?? null, type: 'folder' })).find((item) => item.name === name);
  return found!._id;
}

/** Fills both processes' read models (the team's datasets and both callers' rows). */
async function warm(queries: Record<string, unknown>[] = [{}]) {
  for (const view of views) {
    for (const query of queries) {
      await list(view.boss, query);
      // Rita may be refused a private folder; her rows are loaded either way.
      await view.rita.post('/core/dataset/list', query);
    }
    await all(view.boss);
  }
}

/** Runs the check against both processes, naming the one that failed. */
async function onBoth(check: (view: (typeof views)[number]) => Promise<void>) {
  for (const view of views) {
    try {
      await check(view);
    } catch (error) {
      throw new Error(`${view.name}: ${(error as Error).message}`);
    }
  }
}

const names = (items: { name: string }[]) => items.map((item) => item.name);
let unique = 0;
const label = (what: string) => `${what} ${++unique}`;

describe('every write that changes the dataset list is seen at once, on both processes', () => {
  beforeEach(async () => warm());

  it('create: a dataset, a folder, a folder inside a shared folder (copied collaborators)', async () => {
    const dataset = label('created dataset');
    const created = label('created folder');
    const shared = await folder(label('shared parent'));
    await ctx().permissions.updateCollaborators(boss, (await ctx().permissions.tree.findById(shared))!, [ritaTmbId], 4);
    await warm([{}, { parentId: shared }]);
    await create({ name: dataset });
    await writer().ok(writer().post('/core/dataset/folder/create', { name: created }));
    const child = label('child folder');
    await writer().ok(writer().post('/core/dataset/folder/create', { name: child, parentId: shared }));
    await onBoth(async (view) => {
      expect(names(await list(view.boss))).toEqual(expect.arrayContaining([dataset, created]));
      expect(names(await all(view.boss))).toContain(dataset);
      expect(names(await list(view.rita, { parentId: shared }))).toEqual([child]);
    });
  });

  it('update: name, avatar and intro', async () => {
    const id = await create({ name: label('before rename') });
    await warm();
    const renamed = label('after rename');
    await writer().ok(writer().post('/core/dataset/update', { id, name: renamed, avatar: '/new.svg', intro: 'new intro' }));
    await onBoth(async (view) => {
      const item = (await list(view.boss)).find((x) => x._id === id);
      expect(item).toMatchObject({ name: renamed, avatar: '/new.svg', intro: 'new intro' });
      expect(names(await all(view.boss))).toContain(renamed);
    });
  });

  it('move: into a folder and back to the root', async () => {
    const target = await folder(label('target'));
    const id = await create({ name: label('moved') });
    await warm([{}, { parentId: target }]);
    await writer().ok(writer().post('/core/dataset/update', { id, parentId: target }));
    await onBoth(async (view) => {
      expect((await list(view.boss)).map((x) => x._id)).not.toContain(id);
      expect((await list(view.boss, { parentId: target })).map((x) => x._id)).toEqual([id]);
    });
    await writer().ok(writer().post('/core/dataset/update', { id, parentId: '' }));
    await onBoth(async (view) => {
      expect((await list(view.boss)).find((x) => x._id === id)?.parentId).toBeNull();
      expect(await list(view.boss, { parentId: target })).toEqual([]);
    });
  });

  it('vector model switch (training/rebuildEmbedding)', async () => {
    const id = await create({ name: label('rebuilt') });
    await warm();
    await writer().ok(writer().post('/core/dataset/training/rebuildEmbedding', { datasetId: id, vectorModel: 'lexical-b' }));
    await onBoth(async (view) => {
      expect((await list(view.boss)).find((x) => x._id === id)?.vectorModel.model).toBe('lexical-b');
    });
  });

  it('default permission: shared with the team, then private again', async () => {
    const id = await create({ name: label('shared by default') });
    await warm();
    await writer().ok(writer().post('/core/dataset/update', { id, defaultPermission: 4 }));
    await onBoth(async (view) => {
      expect((await list(view.rita)).map((x) => x._id)).toContain(id);
      expect((await all(view.rita)).map((x) => x._id)).toContain(id);
    });
    await writer().ok(writer().post('/core/dataset/update', { id, defaultPermission: 0 }));
    await onBoth(async (view) => {
      expect((await list(view.rita)).map((x) => x._id)).not.toContain(id);
    });
  });

  it("a folder's default permission reaches what inherits inside it", async () => {
    const parent = await folder(label('opened folder'));
    const inside = await create({ name: label('inherits'), parentId: parent });
    await warm([{}, { searchKey: 'inherits' }]);
    await writer().ok(writer().post('/core/dataset/update', { id: parent, defaultPermission: 4 }));
    await onBoth(async (view) => {
      expect((await list(view.rita, { searchKey: 'inherits' })).map((x) => x._id)).toContain(inside);
      expect((await list(view.rita, { parentId: parent })).map((x) => x._id)).toEqual([inside]);
    });
  });

  it('collaborators: added, changed and removed', async () => {
    const id = await create({ name: label('collaborated') });
    const doc = async () => (await ctx().permissions.tree.findById(id))!;
    await warm();
    await ctx().permissions.updateCollaborators(boss, await doc(), [ritaTmbId], 4);
    await onBoth(async (view) => {
      expect((await list(view.rita)).find((x) => x._id === id)?.permission.value).toBe(4);
    });
    await ctx().permissions.updateCollaborators(boss, await doc(), [ritaTmbId], 6);
    await onBoth(async (view) => {
      expect((await list(view.rita)).find((x) => x._id === id)?.permission.value).toBe(6);
    });
    await ctx().permissions.deleteCollaborator(boss, await doc(), ritaTmbId);
    await onBoth(async (view) => {
      expect((await list(view.rita)).map((x) => x._id)).not.toContain(id);
    });
  });

  it('inheritance resumed: a dataset that was opened follows its private folder again', async () => {
    const parent = await folder(label('private folder'));
    const id = await create({ name: label('opened inside'), parentId: parent });
    await writer().ok(writer().post('/core/dataset/update', { id, defaultPermission: 4 }));
    await warm([{}, { searchKey: 'opened inside' }]);
    await onBoth(async (view) => {
      expect((await list(view.rita, { searchKey: 'opened inside' })).map((x) => x._id)).toContain(id);
    });
    await writer().ok(writer().post('/core/dataset/resumeInheritPermission', { datasetId: id }));
    await onBoth(async (view) => {
      expect((await list(view.rita, { searchKey: 'opened inside' })).map((x) => x._id)).not.toContain(id);
    });
  });

  it('delete: a dataset, and a folder with its content', async () => {
    const id = await create({ name: label('deleted') });
    const parent = await folder(label('deleted folder'));
    const inside = await create({ name: label('deleted with folder'), parentId: parent });
    await warm([{}, { searchKey: 'deleted' }]);
    await writer().ok(writer().del('/core/dataset/delete', { id }));
    await writer().ok(writer().del('/core/dataset/delete', { id: parent }));
    await onBoth(async (view) => {
      const left = [...(await list(view.boss)), ...(await list(view.boss, { searchKey: 'deleted' })), ...(await all(view.boss))].map((x) => x._id);
      expect(left).not.toContain(id);
      expect(left).not.toContain(parent);
      expect(left).not.toContain(inside);
    });
  });

  it('a resumed delete (recorded before a crash, finished later) hides the dataset', async () => {
    const id = await create({ name: label('resumed delete') });
    await ctx().repos.datasets.recordDeletion(boss.teamId, [id]);
    await warm();
    await onBoth(async (view) => {
      expect((await list(view.boss)).map((x) => x._id)).toContain(id);
    });
    expect(await finishDatasetDeletions(ctx())).toBe(1);
    await onBoth(async (view) => {
      expect((await list(view.boss)).map((x) => x._id)).not.toContain(id);
      expect((await all(view.boss)).map((x) => x._id)).not.toContain(id);
    });
  });
});
