import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';
import { latestVersionReader, PUBLISHED_VERSION_MAX_AGE_MS } from '../../src/platform/apps/versions.service.js';
import { call, createApp, ok, simpleNodes } from './apps-helpers.js';

let t: TestApp;
let tok: string;

beforeAll(async () => {
  t = await buildTestApp();
  await createUser(t, { username: 'ver-user', password: 'password-1' });
  tok = await login(t, 'ver-user', 'password-1');
});
afterAll(() => t.close());

const nodes = (n: number) => [{ nodeId: `n${n}`, flowNodeType: 'chatNode', inputs: [{ key: 'systemPrompt', value: `v${n}` }] }];

describe('versions', () => {
  it('save, publish, latest, list, detail, rename, revert', async () => {
    const appId = await createApp(t, tok, { name: 'versioned', type: 'advanced', chatConfig: { welcomeText: 'draft' } });
    const created = await ok(t, tok, 'GET', '/core/app/detail', { appId });
    // No published version yet: latest is the draft.
    expect(await ok(t, tok, 'GET', '/core/app/version/latest', { appId })).toEqual({ nodes: simpleNodes, edges: [], chatConfig: { welcomeText: 'draft' } });

    await ok(t, tok, 'POST', `/core/app/version/publish?appId=${appId}`, { nodes: nodes(1), edges: [], chatConfig: { welcomeText: 'one' }, isPublish: true, versionName: 'first' });
    await ok(t, tok, 'POST', `/core/app/version/publish?appId=${appId}`, { nodes: nodes(2), edges: [], chatConfig: { welcomeText: 'two' }, isPublish: false, versionName: 'saved' });
    const latest = await ok(t, tok, 'GET', '/core/app/version/latest', { appId });
    expect(latest).toEqual({ nodes: nodes(1), edges: [], chatConfig: { welcomeText: 'one' } });
    const detail = await ok(t, tok, 'GET', '/core/app/detail', { appId });
    expect(detail.modules).toEqual(nodes(2));
    expect(new Date(detail.updateTime).getTime()).toBeGreaterThanOrEqual(new Date(created.updateTime).getTime());

    const list = await ok(t, tok, 'POST', '/core/app/version/list', { appId, current: 1, pageSize: 2 });
    expect(list.total).toBe(3);
    expect(list.list.map((v: { versionName: string }) => v.versionName)).toEqual(['saved', 'first']);
    expect(list.list[0].nodes).toEqual(nodes(2));
    for (const url of ['/core/app/version/listWorkflow', '/core/app/version/listWorkflowx']) {
      const history = await ok(t, tok, 'GET', url, { appId, offset: 1, pageSize: 5 });
      expect(history.total).toBe(3);
      expect(history.list[0]).toEqual({ _id: list.list[1]._id, appId, versionName: 'first', time: list.list[1].time, isPublish: true, tmbId: expect.any(String) });
      expect(history.list[0].nodes).toBeUndefined();
    }
    const first = list.list[1]._id;
    expect(await ok(t, tok, 'GET', '/core/app/version/detail', { appId, versionId: first })).toMatchObject({ _id: first, nodes: nodes(1), isPublish: true });
    await ok(t, tok, 'POST', '/core/app/version/update', { appId, versionId: first, versionName: 'renamed' });
    expect((await ok(t, tok, 'GET', '/core/app/version/detail', { appId, versionId: first })).versionName).toBe('renamed');

    await ok(t, tok, 'POST', `/core/app/version/revert?appId=${appId}`, { versionId: first, editNodes: nodes(9), editEdges: [] });
    const reverted = await ok(t, tok, 'GET', '/core/app/detail', { appId });
    expect(reverted.modules).toEqual(nodes(1));
    expect(reverted.chatConfig).toEqual({ welcomeText: 'one' });
    const after = await ok(t, tok, 'POST', '/core/app/version/list', { appId, current: 1, pageSize: 10 });
    expect(after.total).toBe(5);
    expect(after.list.slice(0, 2).map((v: { nodes: unknown }) => v.nodes)).toEqual([nodes(1), nodes(9)]);
    expect(reverted.pluginData.nodeVersion).toBe(after.list[0]._id);
    // Chat still runs the newest published one.
    expect((await ok(t, tok, 'GET', '/core/app/version/latest', { appId })).nodes).toEqual(nodes(1));
  });

  it("saving lowers a dataset search's quote limit to what the graph's chat models take (update and publish)", async () => {
    // The default model takes 120,000 quote tokens.
    const graph = (limit: number) => [
      { nodeId: 'search', flowNodeType: 'datasetSearchNode', inputs: [{ key: 'datasets', value: [] }, { key: 'limit', value: limit }] },
      { nodeId: 'ai', flowNodeType: 'chatNode', inputs: [{ key: 'systemPrompt', value: 'hi' }] },
    ];
    const limitIn = (stored: { flowNodeType: string; inputs: { key: string; value: unknown }[] }[]) =>
      stored.find((node) => node.flowNodeType === 'datasetSearchNode')?.inputs.find((input) => input.key === 'limit')?.value;
    const appId = await createApp(t, tok, { name: 'quoting', type: 'advanced' });
    await ok(t, tok, 'POST', '/core/app/update', { appId, nodes: graph(500000), edges: [] });
    expect(limitIn((await ok(t, tok, 'GET', '/core/app/detail', { appId })).modules)).toBe(120000);
    await ok(t, tok, 'POST', `/core/app/version/publish?appId=${appId}`, { nodes: graph(300000), edges: [], chatConfig: {}, isPublish: true });
    expect(limitIn((await ok(t, tok, 'GET', '/core/app/version/latest', { appId })).nodes)).toBe(120000);
    expect(limitIn((await ok(t, tok, 'GET', '/core/app/detail', { appId })).modules)).toBe(120000);
    await ok(t, tok, 'POST', `/core/app/version/publish?appId=${appId}`, { nodes: graph(5000), edges: [], chatConfig: {}, isPublish: true });
    expect(limitIn((await ok(t, tok, 'GET', '/core/app/version/latest', { appId })).nodes)).toBe(5000);
  });

  it('a published version cached under an unchanged stamp is read again after a minute (a publish stopped before stamping the app)', async () => {
    const appId = await createApp(t, tok, { name: 'half published', type: 'advanced' });
    await ok(t, tok, 'POST', `/core/app/version/publish?appId=${appId}`, { nodes: nodes(1), edges: [], isPublish: true, versionName: 'one' });
    let clock = 1_000_000;
    const latest = latestVersionReader(t.app.apps.deps.versions, () => clock);
    const appDoc = (await t.app.apps.findApp(appId))!;
    expect((await latest(appDoc)).nodes).toEqual(nodes(1));
    // The version is written, the process stops before the app is stamped.
    await t.app.apps.deps.versions.insert({ appId, nodes: nodes(2), edges: [], isPublish: true, versionName: 'two' });
    expect((await latest(appDoc)).nodes).toEqual(nodes(1));
    clock += PUBLISHED_VERSION_MAX_AGE_MS;
    expect((await latest(appDoc)).nodes).toEqual(nodes(2));
  });

  it('a version must belong to the app named in the request', async () => {
    const a = await createApp(t, tok, { name: 'a' });
    const b = await createApp(t, tok, { name: 'b' });
    const versionOfB = (await ok(t, tok, 'POST', '/core/app/version/list', { appId: b })).list[0]._id;
    for (const [method, url, body] of [
      ['GET', '/core/app/version/detail', { appId: a, versionId: versionOfB }],
      ['POST', '/core/app/version/update', { appId: a, versionId: versionOfB, versionName: 'x' }],
      ['POST', `/core/app/version/revert?appId=${a}`, { versionId: versionOfB }],
    ] as const) {
      const r = await call(t, tok, method, url, body);
      expect(r.status, url).toBe(404);
    }
    expect((await ok(t, tok, 'GET', '/core/app/version/detail', { appId: b, versionId: versionOfB })).versionName).toBe('b');
  });

  it('rejects bad version input and folders', async () => {
    const folder = await createApp(t, tok, { name: 'f', type: 'folder' });
    expect((await call(t, tok, 'POST', `/core/app/version/publish?appId=${folder}`, { nodes: [] })).status).toBe(400);
    const app = await createApp(t, tok, { name: 'c' });
    expect((await call(t, tok, 'POST', `/core/app/version/publish?appId=${app}`, { nodes: 'x' })).status).toBe(400);
    // Page sizes above the cap are clamped as the reference does, never refused.
    expect((await call(t, tok, 'POST', '/core/app/version/list', { appId: app, pageSize: 1000 })).status).toBe(200);
    expect((await call(t, tok, 'POST', '/core/app/version/list', { appId: app, pageSize: 0 })).status).toBe(400);
    expect((await call(t, tok, 'GET', '/core/app/version/detail', { appId: app, versionId: 'nope' })).status).toBe(400);
  });

  // The trigger is the one part of a chat config stored as fields: a key the database refuses
  // there (`a.b`, `$x`) was a 500 after the version was already published.
  it("keeps a scheduled trigger's three strings only, refuses other values before anything is written, and reverts a stored odd one", async () => {
    const appId = await createApp(t, tok, { name: 'triggered', type: 'advanced' });
    const trigger = { cronString: '0 * * * *', timezone: 'Asia/Shanghai', defaultPrompt: 'hi' };
    await ok(t, tok, 'POST', `/core/app/version/publish?appId=${appId}`, {
      nodes: nodes(1),
      edges: [],
      isPublish: true,
      chatConfig: { scheduledTriggerConfig: { ...trigger, 'a.b': 1, $x: { y: 1 } } },
    });
    expect((await ok(t, tok, 'GET', '/core/app/detail', { appId })).scheduledTriggerConfig).toEqual(trigger);

    const versions = t.app.mongo.db.collection('app_versions');
    const before = await versions.countDocuments({ appId: new ObjectId(appId) });
    for (const bad of [{ cronString: [[1]] }, { timezone: 5 }, 'hourly']) {
      const r = await call(t, tok, 'POST', `/core/app/version/publish?appId=${appId}`, { nodes: nodes(2), edges: [], isPublish: true, chatConfig: { scheduledTriggerConfig: bad } });
      expect(r.status).toBe(400);
      expect(r.body.message).toContain('chatConfig.scheduledTriggerConfig');
    }
    expect(await versions.countDocuments({ appId: new ObjectId(appId) })).toBe(before);

    // Versions stored before the check: a revert keeps a trigger's strings and drops the rest,
    // and drops a trigger that is not made of strings.
    const storedWith = async (scheduledTriggerConfig: unknown) =>
      (
        await versions.insertOne({
          appId: new ObjectId(appId),
          nodesJson: JSON.stringify(nodes(3)),
          edgesJson: '[]',
          chatConfigJson: JSON.stringify({ scheduledTriggerConfig }),
          isPublish: true,
          versionName: 'odd',
          time: new Date(),
        })
      ).insertedId.toHexString();
    for (const [stored, kept] of [
      [{ cronString: '5 * * * *', 'a.b': 1 }, { cronString: '5 * * * *' }],
      [{ cronString: '5 * * * *', timezone: ['x'] }, null],
    ] as const) {
      await ok(t, tok, 'POST', `/core/app/version/revert?appId=${appId}`, { versionId: await storedWith(stored), editNodes: nodes(1), editEdges: [] });
      const reverted = await ok(t, tok, 'GET', '/core/app/detail', { appId });
      expect(reverted.modules).toEqual(nodes(3));
      expect(reverted.scheduledTriggerConfig).toEqual(kept);
    }
  });
});
