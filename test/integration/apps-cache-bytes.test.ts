import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VersionStamps } from '../../src/infra/version-stamps.js';
import { APP_DOC_CACHE_BYTES } from '../../src/platform/apps/app-doc-cache.js';
import { APP_LIST_CACHE_BYTES, createAppListReadModel } from '../../src/platform/apps/app-list.read-model.js';
import type { AppListDoc } from '../../src/platform/apps/apps.repo.js';
import { PUBLISHED_VERSION_CACHE_BYTES } from '../../src/platform/apps/versions.service.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { commandsDuring } from '../helpers/command-counter.js';
import { createUser, login } from '../helpers/platform.js';
import { createApp, ok } from './apps-helpers.js';

/** Enough ~0.9 MB containers to pass a team's share of the list cache (HTTP plugins are outside the app limit). */
const CONTAINERS = Math.ceil(APP_LIST_CACHE_BYTES.perTeam / 900_000) + 2;
const schemaOf = (i: number) => JSON.stringify({ openapi: '3.0.0', info: { title: `big ${i}`, version: '1', description: `${i}`.padEnd(900_000, 'x') }, paths: {} });

let t: TestApp;
const tok: Record<string, string> = {};

beforeAll(async () => {
  t = await buildTestApp();
  await createUser(t, { username: 'bytes-big', password: 'password-1' });
  await createUser(t, { username: 'bytes-small', password: 'password-1' });
  for (const name of ['big', 'small']) tok[name] = await login(t, `bytes-${name}`, 'password-1');
}, 60_000);

afterAll(async () => {
  await t?.close();
});

const list = (name: string) => ok(t, tok[name] as string, 'POST', '/core/app/list', {});

describe('app caches stay within their byte budgets', () => {
  it('lists and reads a team of many large HTTP plugins correctly, their schemas from the database, while a small team stays in memory', async () => {
    for (let i = 0; i < CONTAINERS; i++) {
      await ok(t, tok.big as string, 'POST', '/core/app/httpPlugin/create', { name: `big ${i}`, pluginData: { apiSchemaStr: schemaOf(i), customHeaders: '{}' } });
    }
    await createApp(t, tok.small as string, { name: 'small app' });
    await list('small');
    const keptTeams = t.app.apps.deps.appList.size();

    for (let round = 0; round < 2; round++) {
      const listed = await list('big');
      expect(listed).toHaveLength(CONTAINERS);
      for (const item of listed) {
        const i = Number(String(item.name).slice(4));
        expect(item.pluginData.apiSchemaStr).toBe(schemaOf(i));
      }
      const detail = await ok(t, tok.big as string, 'GET', '/core/app/detail', { appId: listed[round]._id });
      expect(detail.pluginData.apiSchemaStr).toBe(listed[round].pluginData.apiSchemaStr);
    }
    await Promise.all((await list('big')).map((item: { _id: string }) => ok(t, tok.big as string, 'GET', '/core/app/detail', { appId: item._id })));

    // The big team's list is kept without its schemas; its answer, too heavy to keep, reads the
    // schemas it shows again (one find: test/integration/apps-single-app-reads.test.ts).
    expect(t.app.apps.deps.appList.size()).toBe(keptTeams + 1);
    const again = await commandsDuring(t.app, () => list('big'));
    expect(again.filter((c) => c.name === 'find' && c.collection === 'apps')).toHaveLength(1);
    // The small team is still answered from memory: no app read.
    const small = await commandsDuring(t.app, () => list('small'));
    expect(small.filter((c) => c.collection === 'apps')).toEqual([]);

    const weights = t.app.apps.cacheWeights();
    expect(weights.appLists).toBeGreaterThan(0);
    expect(weights.appLists).toBeLessThanOrEqual(APP_LIST_CACHE_BYTES.total);
    // The big team's apps were all read: what is kept of them is its share, no more.
    expect(weights.appDocs).toBeGreaterThan(APP_DOC_CACHE_BYTES.perTeam / 2);
    expect(weights.appDocs).toBeLessThanOrEqual(APP_DOC_CACHE_BYTES.perTeam);
    expect(weights.publishedVersions).toBeLessThanOrEqual(PUBLISHED_VERSION_CACHE_BYTES.total);
  }, 240_000);
});

describe('app list read model: byte budget', () => {
  const stamps = { read: async () => 'initial', bump: async () => undefined, forget: () => undefined } as unknown as VersionStamps;
  const doc = (id: string, intro: string) => ({ _id: id, parentId: null, teamId: 'T', tmbId: 'M', name: id, intro, type: 'simple' }) as unknown as AppListDoc;

  function model(sizes: Record<string, number>) {
    const loads: string[] = [];
    const lists = createAppListReadModel({
      stamps,
      load: async (teamId) => {
        loads.push(teamId);
        return { apps: [doc(`${teamId}-app`, 'x'.repeat(sizes[teamId] ?? 0))], rows: new Map() };
      },
      toResource: (app) => ({ id: app._id, parentId: null, ownerTmbId: 'M', defaultPermission: 0, inheritPermission: false }) as never,
      bytes: { total: 10_000, perTeam: 4_000, answersPerTeam: 1_000 },
    });
    return { lists, loads };
  }

  it('keeps no team over its share, and the least recent teams go past the total', async () => {
    const { lists, loads } = model({ big: 5_000, a: 3_000, b: 3_000, c: 3_000 });
    await lists.team('big');
    await lists.team('big');
    expect(loads).toEqual(['big', 'big']);
    // Each team weighs ~3.5 KB: two fit in 10 KB; a third drops the least recently used.
    for (const team of ['a', 'b', 'a', 'c', 'a', 'b']) await lists.team(team);
    expect(loads.slice(2)).toEqual(['a', 'b', 'c', 'b']);
    expect(lists.size()).toBe(2);
    expect(lists.weight()).toBeLessThanOrEqual(10_000);
  });

  it("counts a list's answers in its weight, within what the list leaves of its share", async () => {
    const { lists } = model({ a: 2_500 });
    const list = await lists.team('a');
    const listOnly = lists.weight();
    list.answers.set('q1', Buffer.alloc(800));
    expect(lists.weight()).toBe(listOnly + 800);
    list.answers.set('q2', Buffer.alloc(800));
    // Two answers would pass the team's share: the older goes, the list stays kept.
    expect([list.answers.size, lists.weight(), lists.size()]).toEqual([1, listOnly + 800, 1]);
    list.answers.set('q3', Buffer.alloc(5_000));
    expect([list.answers.get('q3'), lists.weight()]).toEqual([undefined, listOnly + 800]);
    expect(await lists.team('a')).toBe(list);
  });
});
