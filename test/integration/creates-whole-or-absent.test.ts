import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuthContext } from '../../src/platform/auth/types.js';
import { type Client, client } from '../fixtures/datasets/client.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';
import { simpleNodes } from './apps-helpers.js';
import { failsOnce, landsThenFails } from '../helpers/forced-failures.js';

/**
 * Creates of apps, app versions, datasets and collections whose main write landed but a step
 * after it failed (its list stamp: a database error) answered an error and
 * kept what they wrote, so the client's retry (a 5xx says "try again") made a second one. Now a
 * create that answers an error leaves nothing: what it wrote is taken back. Like
 * creates-failing-late.test.ts (pushData, app API keys), for the apps and datasets modules.
 */
let t: TestApp;
let api: Client;
let teamId: string;
let auth: AuthContext;
let ritaTmbId: string;

beforeAll(async () => {
  t = await buildTestApp();
  const owner = await createUser(t, { username: 'whole-or-absent', password: 'password-whole-1' });
  teamId = owner.teamId;
  auth = { ...(await t.app.identity.memberContext(owner.tmbId))!, authType: 'token' };
  ritaTmbId = (await createUser(t, { username: 'whole-or-absent-rita', password: 'password-whole-1', teamId, role: 'member', permission: 4 })).tmbId;
  api = client(t, await login(t, 'whole-or-absent', 'password-whole-1'));
});
afterAll(async () => {
  await t?.close();
});

const db = () => t.app.mongo.db;
const count = (name: string, filter: Record<string, unknown>) => db().collection(name).countDocuments(filter);
const inTeam = (filter: Record<string, unknown> = {}) => ({ teamId: new ObjectId(teamId), ...filter });
const counter = async (kind: 'apps' | 'datasets') => (await db().collection<{ _id: string; count: number }>('team_counters').findOne({ _id: `${kind}:${teamId}` }))?.count ?? 0;
const ritaRows = (resourceType: 'app' | 'dataset') => count('resource_permissions', { resourceType, tmbId: new ObjectId(ritaTmbId) });

const failed = (response: { status: number; raw: string }) => expect(response.status, response.raw).toBeGreaterThanOrEqual(500);

describe('an app create failing after its app document landed', () => {
  const appsNamed = (name: string) => count('apps', inTeam({ name }));

  it('core/app/create: nothing stays (app, version, insert record, plan room), and the retry makes one app', async () => {
    const create = () => api.post('/core/app/create', { name: 'late app', type: 'simple', modules: simpleNodes, edges: [] });
    const room = await counter('apps');
    landsThenFails(t.app.apps.deps.apps, 'insert');
    failed(await create());
    expect(await appsNamed('late app')).toBe(0);
    expect(await count('app_versions', { versionName: 'late app' })).toBe(0);
    expect(await count('app_inserts', inTeam())).toBe(0);
    expect(await counter('apps')).toBe(room);

    const appId = await api.ok<string>(create());
    expect(await appsNamed('late app')).toBe(1);
    expect(await count('app_versions', { appId: new ObjectId(appId) })).toBe(1);
    expect(await counter('apps')).toBe(room + 1);
  });

  it('core/app/folder/create into a shared folder: no folder and none of the rows it inherited, and the retry makes one', async () => {
    const shared = await api.ok<string>(api.post('/core/app/create', { name: 'late shared', type: 'folder', modules: [] }));
    await api.ok(api.post('/core/app/collaborator/update', { appId: shared, tmbIds: [ritaTmbId], permission: 4 }));
    const rows = await ritaRows('app');
    const create = () => api.post('/core/app/folder/create', { name: 'late folder', parentId: shared });
    landsThenFails(t.app.apps.deps.apps, 'insert');
    failed(await create());
    expect(await appsNamed('late folder')).toBe(0);
    expect(await ritaRows('app')).toBe(rows);

    await api.ok(create());
    expect(await count('apps', inTeam({ name: 'late folder', parentId: new ObjectId(shared) }))).toBe(1);
    expect(await ritaRows('app')).toBe(rows + 1);
  });

  it('core/app/copy: no copy stays, and the retry makes one', async () => {
    const source = await api.ok<string>(api.post('/core/app/create', { name: 'late source', type: 'simple', modules: simpleNodes, edges: [] }));
    const room = await counter('apps');
    const copy = () => api.post('/core/app/copy', { appId: source });
    landsThenFails(t.app.apps.deps.apps, 'insert');
    failed(await copy());
    expect(await appsNamed('late source Copy')).toBe(0);
    expect(await counter('apps')).toBe(room);

    await api.ok(copy());
    expect(await appsNamed('late source Copy')).toBe(1);
  });
});

describe('a version publish failing after it wrote', () => {
  const changed = [...simpleNodes, { nodeId: 'answer', flowNodeType: 'answerNode', inputs: [], outputs: [] }];

  async function appWithVersion(name: string) {
    const appId = await api.ok<string>(api.post('/core/app/create', { name, type: 'simple', modules: simpleNodes, edges: [] }));
    const versions = () => count('app_versions', { appId: new ObjectId(appId) });
    const draft = async () => (await api.ok<{ modules: { nodeId: string }[] }>(api.get('/core/app/detail', { appId }))).modules.map((node) => node.nodeId);
    const publish = () => api.post('/core/app/version/publish', { appId, nodes: changed, edges: [], chatConfig: {}, isPublish: true, versionName: 'v2' });
    return { appId, versions, draft, publish, before: await draft() };
  }

  it('after its draft write landed: the draft is as before and the version gone; the retry adds one version', async () => {
    const app = await appWithVersion('late publish');
    expect(await app.versions()).toBe(1);
    landsThenFails(t.app.apps.deps.apps, 'update');
    failed(await app.publish());
    expect(await app.versions()).toBe(1);
    expect(await app.draft()).toEqual(app.before);
    expect((await db().collection('apps').findOne({ _id: new ObjectId(app.appId) }))?.pluginData?.nodeVersion).toBe('481');

    await api.ok(app.publish());
    expect(await app.versions()).toBe(2);
    expect(await app.draft()).toEqual(changed.map((node) => node.nodeId));
  });

  it('before its draft write: the version it stored goes; the retry adds one version', async () => {
    const app = await appWithVersion('late publish check');
    failsOnce(t.app.apps.core, 'confirmDependentWrite');
    failed(await app.publish());
    expect(await app.versions()).toBe(1);
    expect(await app.draft()).toEqual(app.before);

    await api.ok(app.publish());
    expect(await app.versions()).toBe(2);
  });
});

describe('a dataset create failing after its dataset document landed', () => {
  const datasetsNamed = (name: string) => count('datasets', inTeam({ name }));

  it('core/dataset/create: no dataset and no plan room stays, and the retry makes one', async () => {
    const room = await counter('datasets');
    const create = () => api.post('/core/dataset/create', { name: 'late dataset' });
    landsThenFails(t.app.datasets.ctx.repos.datasets, 'insert');
    failed(await create());
    expect(await datasetsNamed('late dataset')).toBe(0);
    expect(await counter('datasets')).toBe(room);
    expect(await count('dataset_deletions', inTeam())).toBe(0);

    await api.ok(create());
    expect(await datasetsNamed('late dataset')).toBe(1);
    expect(await counter('datasets')).toBe(room + 1);
  });

  it('core/dataset/folder/create into a shared folder: no folder and none of the rows it inherited, and the retry makes one', async () => {
    const shared = await api.ok<string>(api.post('/core/dataset/create', { name: 'late shared folder', type: 'folder' }));
    const { permissions } = t.app.datasets.ctx;
    await permissions.updateCollaborators(auth, (await permissions.tree.findById(shared))!, [ritaTmbId], 4);
    const rows = await ritaRows('dataset');
    const create = () => api.post('/core/dataset/folder/create', { name: 'late dataset folder', parentId: shared });
    landsThenFails(t.app.datasets.ctx.repos.datasets, 'insert');
    failed(await create());
    expect(await datasetsNamed('late dataset folder')).toBe(0);
    expect(await ritaRows('dataset')).toBe(rows);

    await api.ok(create());
    expect(await count('datasets', inTeam({ name: 'late dataset folder', parentId: new ObjectId(shared) }))).toBe(1);
    expect(await ritaRows('dataset')).toBe(rows + 1);
  });
});

describe('a collection create failing after its collection document landed', () => {
  let datasetId: string;
  beforeAll(async () => {
    datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'late collections' }));
  });
  const collectionsNamed = (name: string) => count('dataset_collections', { datasetId: new ObjectId(datasetId), name });
  const queued = () => count('dataset_trainings', { datasetId: new ObjectId(datasetId) });

  it('collection/create (a folder): no collection stays, and the retry makes one', async () => {
    const create = () => api.post('/core/dataset/collection/create', { datasetId, name: 'late folder', type: 'folder' });
    landsThenFails(t.app.datasets.ctx.repos.collections, 'insert');
    failed(await create());
    expect(await collectionsNamed('late folder')).toBe(0);

    await api.ok(create());
    expect(await collectionsNamed('late folder')).toBe(1);
  });

  it('collection/create/text: no collection and nothing queued stays, and the retry imports it once', async () => {
    const create = () => api.post('/core/dataset/collection/create/text', { datasetId, name: 'late text', text: 'Zebras sleep standing up.' });
    const before = await queued();
    landsThenFails(t.app.datasets.ctx.repos.collections, 'insert');
    failed(await create());
    expect(await collectionsNamed('late text')).toBe(0);
    expect(await queued()).toBe(before);

    await api.ok(create());
    expect(await collectionsNamed('late text')).toBe(1);
    expect(await queued()).toBe(before + 1);
  });
});

describe('a data insert failing after its item landed', () => {
  it('data/insertData: no item stays, and the retry inserts it (not a 409 for an item whose id the client never saw)', async () => {
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'late data' }));
    const collectionId = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'c', type: 'virtual' }));
    const items = () => count('dataset_datas', { collectionId: new ObjectId(collectionId) });
    const insert = () => api.post('/core/dataset/data/insertData', { collectionId, q: 'What is the refund window?', a: '30 days' });
    // The deleted-owner check that runs after the item is written.
    failsOnce(t.app.datasets.ctx.repos.datasets, 'existingIds');
    failed(await insert());
    expect(await items()).toBe(0);

    const dataId = await api.ok<string>(insert());
    expect(await items()).toBe(1);
    expect(await count('dataset_datas', { _id: new ObjectId(dataId) })).toBe(1);
  });
});
