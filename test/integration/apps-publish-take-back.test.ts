/**
 * A publish that fails after its draft write takes the draft back, under the app lock; draft
 * saves (`core/app/update`) and chat turns (touch) do not take that lock. A save landing between
 * the publish's draft write and its take-back was overwritten with the draft as it was before the
 * publish; so was one landing after the publish read the app and before its draft write. Now the
 * take-back sets back only what still holds the publish's values, to what the app held just before
 * the publish's write, and a take-back that fails is logged. Each interleaving is forced by
 * running the other write from inside the publish's own step (no timing).
 */
import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';
import { call, createApp, ok, simpleNodes } from './apps-helpers.js';
import { failsOnce, landsThenFails } from '../helpers/forced-failures.js';

let t: TestApp;
let token: string;
let teamId: string;

beforeAll(async () => {
  t = await buildTestApp();
  const user = await createUser(t, { username: 'publish-take-back', password: 'password-take-1' });
  teamId = user.teamId;
  token = await login(t, 'publish-take-back', 'password-take-1');
});
afterAll(() => t.close());

const node = (nodeId: string) => ({ nodeId, flowNodeType: 'answerNode', inputs: [], outputs: [] });
const published = [...simpleNodes, node('published')];
const saved = [...simpleNodes, node('saved')];

async function appToPublish(name: string) {
  const appId = await createApp(t, token, { name });
  const stored = async () => (await t.app.mongo.db.collection('apps').findOne({ _id: new ObjectId(appId) }))!;
  const draft = async () => ((await ok(t, token, 'GET', '/core/app/detail', { appId })).modules as { nodeId: string }[]).map((n) => n.nodeId);
  const versions = () => t.app.mongo.db.collection('app_versions').countDocuments({ appId: new ObjectId(appId) });
  const publish = () => call(t, token, 'POST', `/core/app/version/publish?appId=${appId}`, { nodes: published, edges: [], chatConfig: {}, isPublish: true, versionName: 'v1' });
  const save = () => ok(t, token, 'POST', '/core/app/update', { appId, nodes: saved, edges: [], chatConfig: { welcomeText: 'saved' } });
  return { appId, stored, draft, versions, publish, save, before: await stored() };
}

const ids = (nodes: { nodeId: string }[]) => nodes.map((n) => n.nodeId);
/** The take-back log lines written since `from` (an offset into the captured text), parsed. */
const linesSince = (from: number) =>
  t
    .logs()
    .slice(from)
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { level: number; msg: string })
    .filter((line) => line.msg?.includes('taking back'));

describe('a publish failing after its draft write', () => {
  it('keeps a draft save that landed before its take-back; what the save did not write is set back', async () => {
    const app = await appToPublish('save after the draft write');
    const from = t.logs().length;
    landsThenFails(t.app.apps.deps.apps, 'update', { after: app.save });
    expect((await app.publish()).status).toBeGreaterThanOrEqual(500);

    expect(await app.draft()).toEqual(ids(saved));
    const stored = await app.stored();
    expect(JSON.parse(stored.chatConfigJson)).toEqual({ welcomeText: 'saved' });
    // The version went, and what pointed at it with it.
    expect(await app.versions()).toBe(1);
    expect(stored.pluginData.nodeVersion).toBe(app.before.pluginData.nodeVersion);
    expect(stored.draftVersionTime).toEqual(app.before.draftVersionTime);
    expect(stored.updateTime).toEqual(app.before.updateTime);
    expect(linesSince(from).map((line) => line.msg)).toEqual([`app ${app.appId}: taking back a failed publish or revert left modulesJson, edgesJson, chatConfigJson, version as another write changed them since`]);
  });

  it('keeps a draft save that landed before its take-back writing the very values it wrote', async () => {
    const app = await appToPublish('same values saved after the draft write');
    const from = t.logs().length;
    const sameSave = () => ok(t, token, 'POST', '/core/app/update', { appId: app.appId, nodes: published, edges: [], chatConfig: {} });
    landsThenFails(t.app.apps.deps.apps, 'update', { after: sameSave });
    expect((await app.publish()).status).toBeGreaterThanOrEqual(500);

    // The save answered 200 after the publish's write: its draft stays, though its values are the publish's.
    expect(await app.draft()).toEqual(ids(published));
    const stored = await app.stored();
    expect(stored.chatConfigJson).toBe('{}');
    // What the save did not write is set back; the version went.
    expect(stored.pluginData.nodeVersion).toBe(app.before.pluginData.nodeVersion);
    expect(stored.draftVersionTime).toEqual(app.before.draftVersionTime);
    expect(await app.versions()).toBe(1);
    expect(linesSince(from).map((line) => line.msg)).toEqual([
      `app ${app.appId}: taking back a failed publish or revert left modulesJson, edgesJson, chatConfigJson, version as another write changed them since`,
    ]);
  });

  it('keeps a draft save that landed after it read the app and before its draft write', async () => {
    const app = await appToPublish('save before the draft write');
    // The save lands inside the publish's draft write, just before it; then that write lands and fails.
    landsThenFails(t.app.apps.deps.apps, 'update', { before: app.save });
    expect((await app.publish()).status).toBeGreaterThanOrEqual(500);

    expect(await app.draft()).toEqual(ids(saved));
    expect(await app.versions()).toBe(1);
    expect((await app.stored()).pluginData.nodeVersion).toBe(app.before.pluginData.nodeVersion);
  });

  it('sets the draft back whole and keeps the later updateTime of a chat turn that landed before its take-back', async () => {
    const app = await appToPublish('chat turn after the draft write');
    const chattedAt = new Date(Date.now() + 60_000);
    landsThenFails(t.app.apps.deps.apps, 'update', { after: () => t.app.apps.touch(teamId, app.appId, chattedAt) });
    expect((await app.publish()).status).toBeGreaterThanOrEqual(500);

    expect(await app.draft()).toEqual(ids(simpleNodes));
    const stored = await app.stored();
    expect(stored.pluginData.nodeVersion).toBe(app.before.pluginData.nodeVersion);
    expect(stored.updateTime).toEqual(chattedAt);
    expect(await app.versions()).toBe(1);
  });

  it('with nothing written meanwhile, sets everything back, updateTime too, and logs nothing', async () => {
    const app = await appToPublish('nothing meanwhile');
    const from = t.logs().length;
    landsThenFails(t.app.apps.deps.apps, 'update');
    expect((await app.publish()).status).toBeGreaterThanOrEqual(500);

    const stored = await app.stored();
    expect(await app.draft()).toEqual(ids(simpleNodes));
    expect(stored.updateTime).toEqual(app.before.updateTime);
    expect(stored.modulesJson).toBe(app.before.modulesJson);
    expect(await app.versions()).toBe(1);
    expect(linesSince(from).filter((line) => line.msg.includes(app.appId))).toEqual([]);

    // The retry publishes once.
    const retried = await app.publish();
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    expect(await app.draft()).toEqual(ids(published));
    expect(await app.versions()).toBe(2);
  });

  it('a take-back that fails is logged as a warning with the app and its versions', async () => {
    const app = await appToPublish('take-back fails');
    const from = t.logs().length;
    landsThenFails(t.app.apps.deps.apps, 'update');
    failsOnce(t.app.apps.deps.versions, 'deleteOfApp');
    expect((await app.publish()).status).toBeGreaterThanOrEqual(500);

    const warnings = linesSince(from).filter((line) => line.level === 40 && line.msg.includes(app.appId));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.msg).toMatch(/taking back a failed publish or revert failed, versions [0-9a-f]{24} and its draft may stay: MongoNetworkError: connection reset/);
  });
});
