import { BSON, type CommandStartedEvent, type CommandSucceededEvent, ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_LIST_CACHE_BYTES } from '../../src/platform/apps/app-list.read-model.js';
import { buildReplica, buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';
import { call, createApp, createFolder, ok, simpleNodes } from './apps-helpers.js';

/**
 * The app instance's share of the list cache (the real one is 16 MiB: a few ~0.9 MB plugins pass
 * this one as 20 pass the real one, at a quarter of the cost), and enough of them to pass it.
 */
const SHARE = 2 * 1024 * 1024;
const CONTAINERS = Math.ceil(SHARE / 900_000) + 2;

/** An app instance built while the list cache's share per team is `perTeam` (read when the instance is made). */
async function buildWithShare(perTeam: number): Promise<TestApp> {
  const share = APP_LIST_CACHE_BYTES as { perTeam: number };
  const saved = share.perTeam;
  share.perTeam = perTeam;
  try {
    return await buildTestApp();
  } finally {
    share.perTeam = saved;
  }
}
const schemaOf = (i: number) => JSON.stringify({ openapi: '3.0.0', info: { title: `big ${i}`, version: '1', description: `${i}`.padEnd(900_000, 'x') }, paths: {} });
const HEAVY_KEYS = ['apiSchemaStr', 'customHeaders'];

interface AppsRead {
  name: string;
  filter: Record<string, unknown> | undefined;
  /** The reply's BSON size: what the database sent back. */
  bytes: number;
}

/** The commands on the apps collection sent while `run` executes, each with its reply's size. */
async function appsReadsDuring(t: TestApp, run: () => Promise<unknown>): Promise<AppsRead[]> {
  const client = t.app.mongo.client;
  const started = new Map<number, Omit<AppsRead, 'bytes'>>();
  const reads: AppsRead[] = [];
  const onStart = (event: CommandStartedEvent) => {
    const target = event.commandName === 'getMore' ? event.command.collection : event.command[event.commandName];
    if (target === 'apps') started.set(event.requestId, { name: event.commandName, filter: event.command.filter ?? event.command.query });
  };
  const onSuccess = (event: CommandSucceededEvent) => {
    const command = started.get(event.requestId);
    if (command) reads.push({ ...command, bytes: BSON.calculateObjectSize(event.reply as BSON.Document) });
  };
  client.on('commandStarted', onStart);
  client.on('commandSucceeded', onSuccess);
  try {
    await run();
  } finally {
    client.off('commandStarted', onStart);
    client.off('commandSucceeded', onSuccess);
  }
  return reads;
}

const totalBytes = (reads: AppsRead[]) => reads.reduce((sum, read) => sum + read.bytes, 0);
const idOf = (filter: Record<string, unknown> | undefined) => (filter?._id instanceof ObjectId ? filter._id.toHexString() : undefined);

let t: TestApp;
let owner: string;
let member: string;
let targetId: string;
const containerIds: string[] = [];

beforeAll(async () => {
  t = await buildWithShare(SHARE);
  const { teamId } = await createUser(t, { username: 'single-owner', password: 'password-1' });
  const { tmbId: memberTmbId } = await createUser(t, { username: 'single-member', password: 'password-1', teamId, role: 'member', permission: 4 });
  owner = await login(t, 'single-owner', 'password-1');
  member = await login(t, 'single-member', 'password-1');
  // Created side by side: nothing here depends on their order.
  [targetId] = await Promise.all([
    createApp(t, owner, { name: 'target app', intro: 'the one asked for' }),
    ...Array.from({ length: CONTAINERS }, (_, i) =>
      ok(t, owner, 'POST', '/core/app/httpPlugin/create', { name: `big ${i}`, pluginData: { apiSchemaStr: schemaOf(i), customHeaders: '{"x":"1"}' } }),
    ),
  ]);
  const listed = await ok(t, owner, 'POST', '/core/app/list', { type: 'httpPlugin' });
  containerIds.push(...listed.map((app: { _id: string }) => app._id));
  // The member may read (not write) one container: its list shows it without schema.
  await ok(t, owner, 'POST', '/proApi/core/app/collaborator/update', { appId: containerIds[0], tmbIds: [memberTmbId], permission: 4 });
}, 240_000);

afterAll(async () => {
  await t?.close();
});

/** The app as stored, read around the app's code. */
async function stored(appId: string) {
  return t.app.mongo.db.collection('apps').findOne({ _id: new ObjectId(appId) });
}

describe('single-app reads in a team whose schemas pass its share of the list cache', () => {
  it("an app detail reads no other app's schema, then that app only, and answers it as stored", async () => {
    expect(containerIds).toHaveLength(CONTAINERS);
    // The first read after a write loads the team's list (to judge the caller): without schemas.
    const first = await appsReadsDuring(t, () => ok(t, owner, 'GET', '/core/app/detail', { appId: containerIds[2] }));
    expect(totalBytes(first)).toBeLessThan(1_000_000 + 100_000);
    for (const [appId, most] of [
      [targetId, 100_000],
      [containerIds[1] as string, 1_000_000],
    ] as const) {
      let detail: Record<string, unknown> = {};
      const reads = await appsReadsDuring(t, async () => {
        detail = await ok(t, owner, 'GET', '/core/app/detail', { appId });
      });
      // Reads of the app itself only (a list load reads every app of the team, schemas included).
      for (const read of reads) expect(idOf(read.filter), JSON.stringify(read.filter)).toBe(appId);
      expect(totalBytes(reads)).toBeLessThan(most);
      const doc = await stored(appId);
      expect(detail).toMatchObject({ _id: appId, name: doc?.name, intro: doc?.intro, modules: JSON.parse(doc?.modulesJson) });
      expect(JSON.stringify(detail.pluginData)).toBe(JSON.stringify(doc?.pluginData));
    }
    const again = await appsReadsDuring(t, () => ok(t, owner, 'GET', '/core/app/detail', { appId: targetId }));
    expect(again).toEqual([]);
  });

  it('a list reads the schemas it answers and no others, each answered as stored', async () => {
    const search = await appsReadsDuring(t, async () => {
      const found = await ok(t, owner, 'POST', '/core/app/list', { searchKey: 'target' });
      expect(found.map((app: { _id: string }) => app._id)).toEqual([targetId]);
      expect(found[0].pluginData).toEqual({ nodeVersion: '481' });
    });
    expect(totalBytes(search)).toBeLessThan(100_000);

    let listed: { _id: string; pluginData: unknown }[] = [];
    const shown = await appsReadsDuring(t, async () => {
      listed = await ok(t, member, 'POST', '/core/app/list', {});
    });
    // The member may not edit the plugin: shown without its schema, so none is read.
    expect(totalBytes(shown)).toBeLessThan(100_000);
    expect(listed.map((app) => app._id)).toEqual([containerIds[0]]);
    const doc = await stored(containerIds[0] as string);
    const visible = Object.fromEntries(Object.entries(doc?.pluginData).filter(([key]) => !HEAVY_KEYS.includes(key)));
    expect(JSON.stringify(listed[0]?.pluginData)).toBe(JSON.stringify(visible));

    const whole = await ok(t, owner, 'POST', '/core/app/list', {});
    expect(whole).toHaveLength(CONTAINERS + 1);
    for (const item of whole) {
      const doc = await stored(item._id);
      expect(JSON.stringify(item.pluginData), item.name).toBe(JSON.stringify(doc?.pluginData));
    }
  });

  it("a write check of a plugin generated under an HTTP plugin reads none of its container's schema", async () => {
    const paths = { '/ping': { get: { operationId: 'ping', summary: 'Ping', responses: { '200': { description: 'ok' } } } } };
    const apiSchemaStr = JSON.stringify({ openapi: '3.0.0', info: { title: 'with a path', version: '1', description: ''.padEnd(600_000, 'y') }, servers: [{ url: 'https://api.example.com' }], paths });
    await ok(t, owner, 'POST', '/core/app/httpPlugin/create', { name: 'with a path', pluginData: { apiSchemaStr } });
    const container = await t.app.mongo.db.collection('apps').findOne({ name: 'with a path' });
    const child = await t.app.mongo.db.collection('apps').findOne({ parentId: container?._id });
    expect(child).not.toBeNull();
    const reads = await appsReadsDuring(t, () => ok(t, owner, 'POST', '/core/app/update', { appId: String(child?._id), intro: 'renamed intro' }));
    expect(reads.length).toBeGreaterThan(0);
    expect(totalBytes(reads)).toBeLessThan(100_000);
  });

  it('a draft save is seen by the next detail (the cached app follows its writes)', async () => {
    const nodes = [...simpleNodes, { nodeId: 'extra', flowNodeType: 'answerNode', inputs: [], outputs: [] }];
    await ok(t, owner, 'POST', '/core/app/update', { appId: targetId, nodes, edges: [] });
    const detail = await ok(t, owner, 'GET', '/core/app/detail', { appId: targetId });
    expect(detail.modules.map((node: { nodeId: string }) => node.nodeId)).toEqual(nodes.map((node) => node.nodeId));
  });
});

describe("single-app reads in a team whose list, even without schemas, passes its share", () => {
  /** A share a few dozen small apps pass (the real one takes ~20,000): set for `heavy` only. */
  const SMALL_SHARE = 8_000;
  let heavy: TestApp;
  let kept: TestApp;
  const tok: Record<string, string> = {};
  const ids = { folder: '', inFolder: '', root: '', rita: '' };

  beforeAll(async () => {
    heavy = await buildWithShare(SMALL_SHARE);
    // A second process on the same database, with the real share: it keeps the list.
    kept = await buildReplica(heavy);
    const { teamId } = await createUser(heavy, { username: 'unkept-boss', password: 'password-1' });
    const { tmbId: ritaTmbId } = await createUser(heavy, { username: 'unkept-rita', password: 'password-1', teamId, role: 'member', permission: 4 });
    ids.rita = ritaTmbId;
    tok.boss = await login(heavy, 'unkept-boss', 'password-1');
    tok.rita = await login(heavy, 'unkept-rita', 'password-1');
    ids.folder = await createFolder(heavy, tok.boss as string, 'shared folder');
    ids.inFolder = await createApp(heavy, tok.boss as string, { name: 'in the folder', parentId: ids.folder });
    await ok(heavy, tok.boss as string, 'POST', '/proApi/core/app/collaborator/update', { appId: ids.folder, tmbIds: [ritaTmbId], permission: 4 });
    const roots = await Promise.all(Array.from({ length: 25 }, (_, i) => createApp(heavy, tok.boss as string, { name: `root app ${i}`, intro: 'an ordinary app' })));
    ids.root = roots[24] as string;
    // Loads the list once: too heavy to keep.
    await ok(heavy, tok.boss as string, 'POST', '/core/app/list', {});
    expect(heavy.app.apps.deps.appList.size()).toBe(0);
  }, 120_000);

  afterAll(async () => {
    await kept?.close();
    await heavy?.close();
  });

  it('a detail reads that app (and the folder it inherits from) only, and answers as a process keeping the list does', async () => {
    const cases = [
      ['boss', ids.root, [ids.root]],
      ['boss', ids.inFolder, [ids.inFolder, ids.folder]],
      ['rita', ids.inFolder, [ids.inFolder, ids.folder]],
      ['rita', ids.root, [ids.root]],
    ] as const;
    for (const [who, appId, readable] of cases) {
      let answer = { status: 0, body: {} };
      const reads = await appsReadsDuring(heavy, async () => {
        answer = await call(heavy, tok[who] as string, 'GET', '/core/app/detail', { appId });
      });
      expect(reads.length, `${who} ${appId}`).toBeGreaterThan(0);
      for (const read of reads) expect(readable as readonly string[], `${who}: ${JSON.stringify(read.filter)}`).toContain(idOf(read.filter));
      const judgedOnList = await call(kept, tok[who] as string, 'GET', '/core/app/detail', { appId });
      expect([answer.status, answer.body], `${who} ${appId}`).toEqual([judgedOnList.status, judgedOnList.body]);
    }
    // Unknown and malformed ids keep their exact errors.
    for (const appId of ['0123456789abcdef01234567', 'nope']) {
      const answer = await call(heavy, tok.boss as string, 'GET', '/core/app/detail', { appId });
      const judgedOnList = await call(kept, tok.boss as string, 'GET', '/core/app/detail', { appId });
      expect([answer.status, answer.body.message]).toEqual([judgedOnList.status, judgedOnList.body.message]);
    }
  });

  it('a permission change is judged at once (nothing of the judgement is kept)', async () => {
    await ok(heavy, tok.boss as string, 'GET', '/proApi/core/app/collaborator/delete', { appId: ids.folder, tmbId: ids.rita });
    const refused = await call(heavy, tok.rita as string, 'GET', '/core/app/detail', { appId: ids.inFolder });
    expect(refused.status).toBe(403);
  });
});
