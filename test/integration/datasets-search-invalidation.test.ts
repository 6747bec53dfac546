import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PermissionCaller } from '../../src/platform/permissions/index.js';
import { type Client, client } from '../fixtures/datasets/client.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';

/**
 * A warm search keeps the dataset's index, its collections and the team's datasets in memory:
 * every write a search's answer depends on is seen by the very next search, searched just before
 * the write so that everything is kept (collection create, rename, forbid, move, delete; data
 * insert, update, delete, training; dataset delete; default permission, collaborators, a move
 * into a closed folder), and another team never gets the dataset's results.
 */

let t: TestApp;
let boss: Client;
let rita: Client;
let outsider: Client;
let teamId: string;
let owner: PermissionCaller;
let ritaTmbId: string;

beforeAll(async () => {
  t = await buildTestApp({ PLAN_MAX_DATASETS: '1000' });
  const created = await createUser(t, { username: 'inv-boss', password: 'password-1' });
  teamId = created.teamId;
  owner = { teamId, tmbId: created.tmbId, role: 'owner', teamPermission: 0, isRoot: false };
  ritaTmbId = (await createUser(t, { username: 'inv-rita', password: 'password-1', teamId, role: 'member', permission: 4 })).tmbId;
  await createUser(t, { username: 'inv-outsider', password: 'password-1' });
  boss = client(t, await login(t, 'inv-boss', 'password-1'));
  rita = client(t, await login(t, 'inv-rita', 'password-1'));
  outsider = client(t, await login(t, 'inv-outsider', 'password-1'));
});

afterAll(async () => {
  await t?.close();
});

interface Hit {
  q: string;
  a: string;
  sourceName: string;
  collectionId: string;
}

const searchAs = (api: Client, datasetId: string, text: string, searchMode = 'mixedRecall') => api.post('/core/dataset/searchTest', { datasetId, text, searchMode, limit: 5000 });
const hits = async (datasetId: string, text: string, searchMode = 'mixedRecall') => (await boss.ok<{ list: Hit[] }>(searchAs(boss, datasetId, text, searchMode))).list;
/** What each mode finds, as `q @ sourceName`, sorted. */
async function seen(datasetId: string, text: string): Promise<string[][]> {
  const modes = ['embedding', 'fullTextRecall', 'mixedRecall'];
  return Promise.all(modes.map(async (mode) => (await hits(datasetId, text, mode)).map((hit) => `${hit.q}${hit.a ? ` / ${hit.a}` : ''} @ ${hit.sourceName}`).sort()));
}
const inEveryMode = (expected: string[]) => [expected, expected, expected];

async function dataset(name: string) {
  return boss.ok<string>(boss.post('/core/dataset/create', { name }));
}
const collection = (datasetId: string, name: string, body: Record<string, unknown> = {}) =>
  boss.ok<string>(boss.post('/core/dataset/collection/create', { datasetId, name, type: 'virtual', ...body }));
const insert = (collectionId: string, q: string) => boss.ok<string>(boss.post('/core/dataset/data/insertData', { collectionId, q }));

describe('the next search after a write, on the writing process, caches warm', () => {
  it('collections: created, renamed, forbidden and allowed again, moved under a folder that is forbidden, deleted', async () => {
    const id = await dataset('collections');
    const first = await collection(id, 'first');
    await insert(first, 'Harbour pilot schedule, first.');
    expect(await seen(id, 'harbour pilot')).toEqual(inEveryMode(['Harbour pilot schedule, first. @ first']));

    const second = await collection(id, 'second');
    await insert(second, 'Harbour pilot schedule, second.');
    expect(await seen(id, 'harbour pilot')).toEqual(inEveryMode(['Harbour pilot schedule, first. @ first', 'Harbour pilot schedule, second. @ second']));

    await boss.ok(boss.post('/core/dataset/collection/update', { id: second, name: 'second renamed' }));
    expect(await seen(id, 'harbour pilot')).toEqual(inEveryMode(['Harbour pilot schedule, first. @ first', 'Harbour pilot schedule, second. @ second renamed']));

    await boss.ok(boss.post('/core/dataset/collection/update', { id: first, forbid: true }));
    expect(await seen(id, 'harbour pilot')).toEqual(inEveryMode(['Harbour pilot schedule, second. @ second renamed']));
    await boss.ok(boss.post('/core/dataset/collection/update', { id: first, forbid: false }));
    expect(await seen(id, 'harbour pilot')).toEqual(inEveryMode(['Harbour pilot schedule, first. @ first', 'Harbour pilot schedule, second. @ second renamed']));

    const folder = await collection(id, 'folder', { type: 'folder' });
    await boss.ok(boss.post('/core/dataset/collection/update', { id: second, parentId: folder }));
    expect(await seen(id, 'harbour pilot')).toEqual(inEveryMode(['Harbour pilot schedule, first. @ first', 'Harbour pilot schedule, second. @ second renamed']));
    await boss.ok(boss.post('/core/dataset/collection/update', { id: folder, forbid: true }));
    expect(await seen(id, 'harbour pilot')).toEqual(inEveryMode(['Harbour pilot schedule, first. @ first']));
    await boss.ok(boss.post('/core/dataset/collection/update', { id: second, parentId: null }));
    await boss.ok(boss.post('/core/dataset/collection/update', { id: second, forbid: false }));
    expect(await seen(id, 'harbour pilot')).toEqual(inEveryMode(['Harbour pilot schedule, first. @ first', 'Harbour pilot schedule, second. @ second renamed']));

    await boss.ok(boss.post('/core/dataset/collection/delete', { id: first }));
    expect(await seen(id, 'harbour pilot')).toEqual(inEveryMode(['Harbour pilot schedule, second. @ second renamed']));
  });

  it('data items: inserted, updated, deleted', async () => {
    const id = await dataset('data');
    const target = await collection(id, 'notes');
    await insert(target, 'Glacier survey notes.');
    expect(await seen(id, 'glacier survey')).toEqual(inEveryMode(['Glacier survey notes. @ notes']));
    const added = await insert(target, 'Glacier survey, second season.');
    expect(await seen(id, 'glacier survey')).toEqual(inEveryMode(['Glacier survey notes. @ notes', 'Glacier survey, second season. @ notes']));
    await boss.ok(boss.post('/core/dataset/data/update', { dataId: added, q: 'Glacier survey, third season.', a: 'Edited.' }));
    expect(await seen(id, 'glacier survey')).toEqual(inEveryMode(['Glacier survey notes. @ notes', 'Glacier survey, third season. / Edited. @ notes']));
    await boss.ok(boss.post('/core/dataset/data/delete', { id: added }));
    expect(await seen(id, 'glacier survey')).toEqual(inEveryMode(['Glacier survey notes. @ notes']));
    // Items the training worker writes.
    await boss.ok(boss.post('/core/dataset/data/pushData', { collectionId: target, data: [{ q: 'Glacier survey, trained.' }] }));
    await t.app.datasets.trainingWorker.drain();
    expect(await seen(id, 'glacier survey')).toEqual(inEveryMode(['Glacier survey notes. @ notes', 'Glacier survey, trained. @ notes']));
  });

  it('a dataset delete: the next search is refused as for a dataset that never was', async () => {
    const id = await dataset('doomed');
    await insert(await collection(id, 'c'), 'Lighthouse keeper diary.');
    expect(await seen(id, 'lighthouse keeper')).toEqual(inEveryMode(['Lighthouse keeper diary. @ c']));
    await boss.ok(boss.post('/core/dataset/delete', { id }));
    const refused = await searchAs(boss, id, 'lighthouse keeper');
    expect([refused.status, refused.body.statusText]).toEqual([404, 'unExistDataset']);
    // The workflow's search node finds no dataset, so no quotes.
    expect(await t.app.datasets.findInTeam(teamId, [id])).toEqual([]);
  });

  it("permissions: a member's search follows the dataset's default permission at once", async () => {
    const id = await dataset('shared');
    await insert(await collection(id, 'c'), 'Volcanic ash forecast.');
    expect((await searchAs(rita, id, 'volcanic ash')).status).toBe(403);
    await boss.ok(boss.post('/core/dataset/update', { id, defaultPermission: 4 }));
    const allowed = await rita.ok<{ list: Hit[] }>(searchAs(rita, id, 'volcanic ash'));
    expect(allowed.list.map((hit) => hit.q)).toEqual(['Volcanic ash forecast.']);
    await boss.ok(boss.post('/core/dataset/update', { id, defaultPermission: 0 }));
    expect((await searchAs(rita, id, 'volcanic ash')).status).toBe(403);
  });

  it("permissions: a collaborator added and removed, and a move into a folder that refuses the member", async () => {
    const id = await dataset('collaborated');
    await insert(await collection(id, 'c'), 'Tide table for the estuary.');
    const perms = t.app.datasets.ctx.permissions;
    const doc = async () => (await perms.tree.findById(id))!;
    expect((await searchAs(rita, id, 'tide table')).status).toBe(403);
    await perms.updateCollaborators(owner, await doc(), [ritaTmbId], 4);
    expect((await rita.ok<{ list: Hit[] }>(searchAs(rita, id, 'tide table'))).list.map((hit) => hit.q)).toEqual(['Tide table for the estuary.']);
    await perms.deleteCollaborator(owner, await doc(), ritaTmbId);
    expect((await searchAs(rita, id, 'tide table')).status).toBe(403);

    await boss.ok(boss.post('/core/dataset/update', { id, defaultPermission: 4 }));
    expect((await searchAs(rita, id, 'tide table')).status).toBe(200);
    await boss.ok(boss.post('/core/dataset/folder/create', { name: 'closed folder' }));
    const folders = await boss.ok<{ _id: string; name: string }[]>(boss.post('/core/dataset/list', { parentId: null, type: 'folder' }));
    const closed = folders.find((folder) => folder.name === 'closed folder')!._id;
    await boss.ok(boss.post('/core/dataset/update', { id, parentId: closed }));
    expect((await searchAs(rita, id, 'tide table')).status).toBe(403);
  });

  it("another team: refused, and its own search of the same words never shows the first team's items", async () => {
    const id = await dataset('private');
    await insert(await collection(id, 'c'), 'Observatory archive record.');
    expect(await seen(id, 'observatory archive')).toEqual(inEveryMode(['Observatory archive record. @ c']));
    expect((await searchAs(outsider, id, 'observatory archive')).status).toBe(403);
    const theirs = await outsider.ok<string>(outsider.post('/core/dataset/create', { name: 'theirs' }));
    const list = await outsider.ok<{ list: Hit[] }>(searchAs(outsider, theirs, 'observatory archive'));
    expect(list.list).toEqual([]);
  });
});
