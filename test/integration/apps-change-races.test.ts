import type { FastifyInstance } from 'fastify';
import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { buildTestApp, type TestApp, testConfig } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';
import { call, ok } from './apps-helpers.js';

/**
 * Changes of one app computed from reading it (publish, revert, an HTTP plugin's reconciliation)
 * sent in parallel, to one process and to two on the same database: each runs alone
 * (core.withAppLock), so none writes what it computed from a state another has changed since.
 */
let t: TestApp;
let replica: FastifyInstance;
let token: string;
let teamId: string;

const schema = (...ops: string[]) => JSON.stringify({ openapi: '3.0.0', servers: [{ url: 'http://127.0.0.1:9' }], paths: Object.fromEntries(ops.map((op) => [`/${op}`, { get: { operationId: op } }])) });
const graphSaying = (text: string) => ({
  nodes: [
    { nodeId: 'start', flowNodeType: 'workflowStart', name: 'Start', inputs: [], outputs: [] },
    { nodeId: 'answer', flowNodeType: 'answerNode', name: 'Answer', inputs: [{ key: 'text', value: text }], outputs: [] },
  ],
  edges: [{ source: 'start', sourceHandle: 'start-source-right', target: 'answer', targetHandle: 'answer-target-left' }],
  chatConfig: {},
});
const saying = (nodes: { nodeId: string; inputs: { value: unknown }[] }[]) => nodes.find((n) => n.nodeId === 'answer')?.inputs[0]?.value;
/** Requests alternate between the two processes. */
const on = (i: number, method: string, url: string, payload: unknown) => call(i % 2 === 0 ? t : ({ app: replica } as TestApp), token, method, url, payload);

/** The draft (what the editor opens) is the newest version, and chat runs the newest published one. */
async function expectConsistent(appId: string) {
  const detail = await ok(t, token, 'GET', '/core/app/detail', { appId });
  const latest = await ok(t, token, 'GET', '/core/app/version/latest', { appId });
  const versions = (await ok(t, token, 'POST', '/core/app/version/list', { appId, pageSize: 30 })).list;
  const newestPublished = versions.find((v: { isPublish?: boolean }) => v.isPublish);
  expect({ draft: saying(detail.modules), nodeVersion: detail.pluginData.nodeVersion, runs: saying(latest.nodes) }).toEqual({
    draft: saying(versions[0].nodes),
    nodeVersion: versions[0]._id,
    runs: saying(newestPublished.nodes),
  });
}

async function newApp(name: string): Promise<string> {
  const g = graphSaying('first');
  const appId = (await ok(t, token, 'POST', '/core/app/create', { name, type: 'advanced', modules: g.nodes, edges: g.edges })) as string;
  await ok(t, token, 'POST', `/core/app/version/publish?appId=${appId}`, { ...g, isPublish: true, versionName: 'v0' });
  return appId;
}

beforeAll(async () => {
  t = await buildTestApp();
  replica = await buildApp(testConfig({ MONGODB_URI: t.config.MONGODB_URI }), { startupTasks: false });
  await replica.ready();
  teamId = (await createUser(t, { username: 'racer', password: 'password-r1' })).teamId;
  token = await login(t, 'racer', 'password-r1');
});

afterAll(async () => {
  await replica?.close();
  await t?.close();
});

describe('parallel httpPlugin/update of one plugin', () => {
  it('the same schema change sent 8 times at once adds each operation once and takes room for it once', async () => {
    await ok(t, token, 'POST', '/core/app/httpPlugin/create', { name: 'Tools', pluginData: { apiSchemaStr: schema('one') } });
    const id = (await ok(t, token, 'POST', '/core/app/list', { type: 'httpPlugin' }))[0]._id as string;
    const update = { appId: id, name: 'Tools', pluginData: { apiSchemaStr: schema('one', 'two', 'three') } };
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => on(i, 'POST', '/core/app/httpPlugin/update', update)));
    expect(results.map((r) => r.status)).toEqual(results.map(() => 200));

    const children = async () => (await t.app.mongo.db.collection('apps').find({ parentId: new ObjectId(id) }).toArray()).map((c) => `${c.pluginData?.pluginUniId}:${c._id}`).sort();
    const after = await children();
    expect(after.map((c) => c.split(':')[0])).toEqual(['one', 'three', 'two']);
    const counter = await t.app.mongo.db.collection<{ _id: string; count: number }>('team_counters').findOne({ _id: `apps:${teamId}` });
    expect(counter?.count).toBe(3);
    // The stored schema is the one sent: saving it again changes no child.
    await ok(t, token, 'POST', '/core/app/httpPlugin/update', update);
    expect(await children()).toEqual(after);
  });
});

describe('parallel publishes and reverts of one app', () => {
  // The trials race on apps of their own, side by side: most of a trial is its requests waiting
  // in line for their app's lock, which the other trials' waits overlap.
  const trials = (run: (trial: number) => Promise<void>) => Promise.all(Array.from({ length: 3 }, (_, trial) => run(trial)));

  it('after parallel publishes through two processes, the draft is the newest version and chat runs it', async () => {
    await trials(async (trial) => {
      const appId = await newApp(`Pub ${trial}`);
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) => on(i, 'POST', `/core/app/version/publish?appId=${appId}`, { ...graphSaying(`answer ${i}`), isPublish: true, versionName: `v${i}` })),
      );
      expect(results.map((r) => r.status)).toEqual(results.map(() => 200));
      await expectConsistent(appId);
    });
  });

  it('after parallel reverts, saves and publishes, the draft is the newest version', async () => {
    const edit = graphSaying('edit state');
    await trials(async (trial) => {
      const appId = await newApp(`Mixed ${trial}`);
      const old = (await ok(t, token, 'POST', '/core/app/version/list', { appId })).list[0]._id as string;
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          i % 3 === 0
            ? on(i, 'POST', '/core/app/version/revert', { appId, versionId: old, editNodes: edit.nodes, editEdges: edit.edges, editChatConfig: {} })
            : on(i, 'POST', `/core/app/version/publish?appId=${appId}`, { ...graphSaying(`answer ${i}`), isPublish: i % 3 === 1, versionName: `v${i}` }),
        ),
      );
      expect(results.map((r) => r.status)).toEqual(results.map(() => 200));
      await expectConsistent(appId);
    });
  });

  it('a publish through a process whose clock is behind the last publisher’s is still the newest version', async () => {
    const appId = await newApp('Skewed');
    // As if the last publish came from a replica whose clock runs a minute ahead.
    const ahead = new Date(Date.now() + 60_000);
    const versions = t.app.mongo.db.collection('app_versions');
    const last = await versions.findOne({ appId: new ObjectId(appId), isPublish: true }, { sort: { time: -1 } });
    await versions.updateOne({ _id: last?._id }, { $set: { time: ahead } });
    await t.app.mongo.db.collection('apps').updateOne({ _id: new ObjectId(appId) }, { $set: { draftVersionTime: ahead } });

    await ok(t, token, 'POST', `/core/app/version/publish?appId=${appId}`, { ...graphSaying('second'), isPublish: true, versionName: 'v1' });
    const latest = await ok(t, token, 'GET', '/core/app/version/latest', { appId });
    expect(saying(latest.nodes)).toBe('second');
    await expectConsistent(appId);
  });
});
