import { LIST_STAMP_LEASE_MS } from '../../src/infra/version-stamps.js';
import { type CommandStartedEvent, type Document, ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { escapeRegex } from '../../src/infra/mongo.js';
import { createVersionStamps, type VersionStamps } from '../../src/infra/version-stamps.js';
import { appListStampKey, createAppListReadModel } from '../../src/platform/apps/app-list.read-model.js';
import { type AppListDoc, LIST_PROJECTION } from '../../src/platform/apps/apps.repo.js';
import { CHAT_APP_TYPES } from '../../src/platform/apps/apps.schema.js';
import { plain } from '../../src/infra/plain-record.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { commandsDuring } from '../helpers/command-counter.js';
import { createUser, login } from '../helpers/platform.js';
import { call, createApp, createFolder, ok } from './apps-helpers.js';

let t: TestApp;
let teamId: string;
const tok: Record<string, string> = {};
const who: Record<string, { tmbId: string; role: 'owner' | 'member'; teamPermission: number }> = {};
let folder: string;

const list = (name: string, body: Record<string, unknown> = {}) => ok(t, tok[name] as string, 'POST', '/core/app/list', body);

beforeAll(async () => {
  t = await buildTestApp({ PLAN_MAX_APPS: '1000' });
  const boss = await createUser(t, { username: 'cache-boss', password: 'password-1' });
  teamId = boss.teamId;
  who.boss = { tmbId: boss.tmbId, role: 'owner', teamPermission: 0 };
  const rita = await createUser(t, { username: 'cache-rita', password: 'password-1', teamId, role: 'member', permission: 4 });
  who.rita = { tmbId: rita.tmbId, role: 'member', teamPermission: 4 };
  const other = await createUser(t, { username: 'cache-other', password: 'password-1' });
  who.other = { tmbId: other.tmbId, role: 'owner', teamPermission: 0 };
  for (const name of ['boss', 'rita', 'other']) tok[name] = await login(t, `cache-${name}`, 'password-1');

  folder = await createFolder(t, tok.boss as string, 'Folder (x)');
  await ok(t, tok.boss as string, 'POST', '/core/app/update', { appId: folder, defaultPermission: 4 });
  for (let i = 0; i < 24; i++) {
    const id = await createApp(t, tok.boss as string, { name: `bulk ${i}`, type: i % 3 ? 'simple' : 'advanced', parentId: i % 4 ? null : folder });
    if (i % 2) await ok(t, tok.boss as string, 'POST', '/core/app/update', { appId: id, defaultPermission: 4 });
  }
  const shared = await createApp(t, tok.boss as string, { name: 'a.b (c) CamelCase', intro: 'Has an INTRO' });
  await ok(t, tok.boss as string, 'POST', '/core/app/collaborator/update', { appId: shared, tmbIds: [who.rita?.tmbId], permission: 6 });
  await createApp(t, tok.other as string, { name: 'bulk of another team' });
  // Imported documents: no parentId field (a root app for MongoDB), and two apps updated at the same instant.
  const apps = t.app.mongo.db.collection('apps');
  const base = { teamId: new ObjectId(teamId), tmbId: new ObjectId(who.boss?.tmbId), avatar: '', intro: '', modulesJson: '[]', edgesJson: '[]', defaultPermission: 4 };
  const same = new Date('2024-01-01T00:00:00Z');
  await apps.insertMany([
    { ...base, name: 'legacy no parent', type: 'simple', updateTime: same },
    { ...base, name: 'legacy twin', type: 'simple', parentId: null, updateTime: same },
  ]);
  await createVersionStamps(t.app.mongo.db, { leaseMs: 0 }).bump(appListStampKey(teamId));
});
afterAll(() => t?.close());

/** What the list answered before the read model: the former MongoDB query, judged by resolveMany. */
async function formerList(name: string, input: { parentId?: string | null; type?: string | string[]; searchKey?: string; getRecentlyChat?: boolean }) {
  const caller = who[name] as (typeof who)['boss'];
  const auth = { teamId, tmbId: caller.tmbId, role: caller.role, teamPermission: caller.teamPermission, isRoot: false };
  const filter: Document = { teamId: new ObjectId(teamId) };
  const parentId = input.getRecentlyChat || input.searchKey ? undefined : input.parentId;
  if (parentId !== undefined) filter.parentId = parentId === null ? null : new ObjectId(parentId);
  const types = input.getRecentlyChat ? [...CHAT_APP_TYPES] : input.type === undefined ? undefined : [input.type].flat();
  if (types) filter.type = { $in: types };
  if (input.searchKey) filter.$or = [{ name: { $regex: escapeRegex(input.searchKey), $options: 'i' } }, { intro: { $regex: escapeRegex(input.searchKey), $options: 'i' } }];
  const stored = await t.app.mongo.db
    .collection('apps')
    .find(filter, { projection: LIST_PROJECTION, sort: { updateTime: -1, _id: -1 }, limit: input.searchKey ? 20 : 1000 })
    .toArray();
  const docs = stored.map((doc) => plain(doc) as unknown as AppListDoc);
  const perms = t.app.apps.deps.perms;
  const parent = input.parentId ? await perms.tree.findById(input.parentId) : null;
  const resolved = await perms.resolveMany(auth, docs, parent ? [parent] : []);
  const out = docs
    .map((doc) => ({ id: doc._id, ...resolved.get(doc._id) }))
    .filter((x) => x.permission?.hasReadPer)
    .map((x) => [x.id, x.permission?.value, x.defaultPermission]);
  return input.getRecentlyChat ? out.slice(0, 15) : out;
}

describe('app list read model', () => {
  it('answers every query as the former MongoDB query did (filters, order, limits, permissions)', async () => {
    const queries = [
      {},
      { parentId: null },
      { parentId: folder },
      { type: 'folder' },
      { type: ['simple', 'advanced'] },
      { searchKey: 'bulk' },
      { searchKey: 'A.B (C)' },
      { searchKey: 'camel' },
      { searchKey: 'intro' },
      { searchKey: '.*' },
      { getRecentlyChat: true },
      { parentId: folder, searchKey: 'bulk 1' },
      { parentId: null, type: 'simple' },
    ];
    for (const name of ['boss', 'rita']) {
      for (const query of queries) {
        const answered = (await list(name, query)).map((x: { _id: string; permission: { value: number }; defaultPermission: number }) => [x._id, x.permission.value, x.defaultPermission]);
        expect(answered, `${name} ${JSON.stringify(query)}`).toEqual(await formerList(name, query));
      }
    }
    const root = (await list('boss', { parentId: null })).map((x: { name: string }) => x.name);
    expect(root.slice(-2)).toEqual(['legacy twin', 'legacy no parent']);
    expect((await list('rita', { searchKey: 'bulk' })).length).toBeLessThan(20);
  });

  it('a repeated list reads only the stamp (and what auth reads): no apps, no app permission rows', async () => {
    // Auth reads the caller's team row of resource_permissions; the app rows are what must go.
    const appRowReads: unknown[] = [];
    const onCommand = (event: CommandStartedEvent) => {
      if (event.command.find === 'resource_permissions' && event.command.filter?.resourceType !== 'team') appRowReads.push(event.command.filter);
    };
    for (const body of [{ parentId: '' }, { parentId: folder }, { searchKey: 'bulk' }, { getRecentlyChat: true }]) {
      const first = await t.app.inject({ method: 'POST', url: '/api/core/app/list', headers: { token: tok.rita as string }, payload: body });
      let second = first;
      // Past the stamp's lease, so the repeated list reads it once (inside the lease, not at all).
      await new Promise((resolve) => setTimeout(resolve, LIST_STAMP_LEASE_MS + 20));
      t.app.mongo.client.on('commandStarted', onCommand);
      const commands = await commandsDuring(t.app, async () => {
        second = await t.app.inject({ method: 'POST', url: '/api/core/app/list', headers: { token: tok.rita as string }, payload: body });
      }).finally(() => t.app.mongo.client.off('commandStarted', onCommand));
      expect(second.body).toBe(first.body);
      expect(commands.filter((c) => c.collection === 'apps'), JSON.stringify(body)).toEqual([]);
      expect(appRowReads, JSON.stringify(body)).toEqual([]);
      const appStamps = commands.filter((c) => c.collection === 'version_stamps' && c.key?.startsWith('apps:'));
      expect(appStamps.map((c) => c.name)).toEqual(['find']);
    }
  });

  it("never serves another team's apps, nor lets it list inside them", async () => {
    await list('boss');
    const others = await list('other');
    expect(others.map((x: { name: string }) => x.name)).toEqual(['bulk of another team']);
    expect((await list('other', { searchKey: 'bulk' })).map((x: { name: string }) => x.name)).toEqual(['bulk of another team']);
    const inside = await call(t, tok.other as string, 'POST', '/core/app/list', { parentId: folder });
    expect(inside.status).toBe(403);
    expect(inside.body.message).toMatch(/belongs to another team/);
    expect((await list('boss')).map((x: { name: string }) => x.name)).not.toContain('bulk of another team');
  });

  it('refuses a folder the member cannot read, with the same error as a detail read', async () => {
    const closed = await createFolder(t, tok.boss as string, 'closed');
    const listed = await call(t, tok.rita as string, 'POST', '/core/app/list', { parentId: closed });
    const detail = await call(t, tok.rita as string, 'GET', '/core/app/detail', { appId: closed });
    expect(listed.status).toBe(403);
    expect(detail.status).toBe(403);
    expect(listed.body).toEqual(detail.body);
  });
});

describe('app list read model: cache policy', () => {
  function fakeModel(options: { maxTeams?: number; maxAgeMs?: number } = {}) {
    const values = new Map<string, string>();
    const loads: string[] = [];
    let clock = 0;
    const stamps = {
      read: async (key: string) => values.get(key) ?? 'initial',
      bump: async (key: string) => void values.set(key, `${Math.random()}`),
      forget: () => undefined,
    } as unknown as VersionStamps;
    const model = createAppListReadModel({
      stamps,
      load: async (teamId) => {
        loads.push(teamId);
        await new Promise((resolve) => setTimeout(resolve, 5));
        return { apps: [], rows: new Map() };
      },
      toResource: () => {
        throw new Error('no apps');
      },
      now: () => clock,
      ...options,
    });
    const advance = (ms: number) => {
      clock += ms;
    };
    return { model, loads, advance };
  }

  it('keeps at most maxTeams teams, dropping the least recently used', async () => {
    const { model, loads } = fakeModel({ maxTeams: 2 });
    for (const team of ['t1', 't2', 't1', 't3', 't1', 't2']) await model.team(team);
    expect(loads).toEqual(['t1', 't2', 't3', 't2']);
    expect(model.size()).toBe(2);
  });

  it('loads again when the stamp moves or the list is too old; concurrent misses share a load', async () => {
    const { model, loads, advance } = fakeModel({ maxAgeMs: 1000 });
    await Promise.all([model.team('t1'), model.team('t1'), model.team('t1')]);
    expect(loads).toEqual(['t1']);
    await model.changed('t1');
    await model.team('t1');
    await model.team('t1');
    expect(loads).toEqual(['t1', 't1']);
    advance(1000);
    await model.team('t1');
    expect(loads).toEqual(['t1', 't1', 't1']);
  });
});
