import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';
import { call, createFolder, ok } from './apps-helpers.js';

/**
 * The plan's app limit holds under parallel requests: room is reserved atomically before each
 * insert, given back when the insert fails or the app is deleted. Folders and HTTP-plugin
 * containers do not count; each generated plugin does.
 */
let t: TestApp;

beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(() => t.close());

async function team(name: string, maxApps: number) {
  const user = await createUser(t, { username: `lim-${name}`, password: 'password-1' });
  await t.app.teamLimits.setPlan(user.teamId, { maxApps });
  return { teamId: user.teamId, token: await login(t, `lim-${name}`, 'password-1') };
}
const counted = (teamId: string) => t.app.mongo.db.collection('apps').countDocuments({ teamId: new ObjectId(teamId), type: { $nin: ['folder', 'httpPlugin'] } });
const create = (token: string, name: string, extra: Record<string, unknown> = {}) => call(t, token, 'POST', '/core/app/create', { name, type: 'simple', modules: [], ...extra });
const schema = (...ops: string[]) => JSON.stringify({ openapi: '3.0.0', paths: Object.fromEntries(ops.map((op) => [`/${op}`, { get: { operationId: op } }])) });

describe('plan app limit under parallel requests', () => {
  it('30 parallel creates with maxApps 4 make exactly 4 apps; a delete makes room for one more', async () => {
    const { teamId, token } = await team('parallel', 4);
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => create(token, `p${i}`)));
    const created = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status !== 200);
    expect(created).toHaveLength(4);
    expect(refused).toHaveLength(26);
    for (const r of refused) {
      expect(r.status).toBe(403);
      expect(r.body.statusText).toBe('appAmountNotEnough');
    }
    expect(await counted(teamId)).toBe(4);

    await ok(t, token, 'DELETE', '/core/app/del', { appId: created[0]?.data });
    expect(await counted(teamId)).toBe(3);
    const again = await Promise.all(Array.from({ length: 5 }, (_, i) => create(token, `again${i}`)));
    expect(again.filter((r) => r.status === 200)).toHaveLength(1);
    expect(await counted(teamId)).toBe(4);
    // Folders do not count.
    expect((await call(t, token, 'POST', '/core/app/folder/create', { name: 'free folder' })).status).toBe(200);
  });

  it('parallel copies and workflow transitions share the same limit', async () => {
    const { teamId, token } = await team('copies', 3);
    const source = (await create(token, 'source')).data as string;
    const results = await Promise.all([
      ...Array.from({ length: 8 }, () => call(t, token, 'POST', '/core/app/copy', { appId: source })),
      ...Array.from({ length: 4 }, () => call(t, token, 'POST', '/core/app/transitionWorkflow', { appId: source, createNew: true })),
    ]);
    expect(results.filter((r) => r.status === 200)).toHaveLength(2);
    expect(results.filter((r) => r.status === 403 && r.body.statusText === 'appAmountNotEnough')).toHaveLength(10);
    expect(await counted(teamId)).toBe(3);
  });

  it('deleting a folder gives back the room of every app inside it', async () => {
    const { teamId, token } = await team('folders', 3);
    const folder = await createFolder(t, token, 'box');
    for (const name of ['a', 'b', 'c']) expect((await create(token, name, { parentId: folder })).status).toBe(200);
    expect((await create(token, 'd')).status).toBe(403);
    await ok(t, token, 'DELETE', '/core/app/del', { appId: folder });
    expect(await counted(teamId)).toBe(0);
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => create(token, `after${i}`)));
    expect(results.filter((r) => r.status === 200)).toHaveLength(3);
  });

  it('a create whose folder disappears gives its room back', async () => {
    const { teamId, token } = await team('vanishing', 5);
    for (let round = 0; round < 4; round++) {
      const folder = await createFolder(t, token, `vanishing ${round}`);
      await Promise.all([call(t, token, 'DELETE', '/core/app/del', { appId: folder }), create(token, `late ${round}`, { parentId: folder })]);
    }
    // Whatever the interleavings, the room left is exactly maxApps minus the apps that exist.
    const existing = await counted(teamId);
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => create(token, `fill${i}`)));
    expect(results.filter((r) => r.status === 200)).toHaveLength(5 - existing);
  });

  it('HTTP plugins: the container is free, each operation counts, an update reserves only the difference', async () => {
    const { teamId, token } = await team('plugins', 3);
    expect((await create(token, 'one')).status).toBe(200);
    const tooMany = await call(t, token, 'POST', '/core/app/httpPlugin/create', { name: 'three ops', pluginData: { apiSchemaStr: schema('a', 'b', 'c') } });
    expect(tooMany.status).toBe(403);
    expect(tooMany.body.statusText).toBe('appAmountNotEnough');
    expect(await t.app.mongo.db.collection('apps').countDocuments({ teamId: new ObjectId(teamId) })).toBe(1);

    await ok(t, token, 'POST', '/core/app/httpPlugin/create', { name: 'two ops', pluginData: { apiSchemaStr: schema('a', 'b') } });
    expect(await counted(teamId)).toBe(3);
    const http = (await ok(t, token, 'POST', '/core/app/list', { type: 'httpPlugin' }))[0]._id as string;
    // At the limit: swapping one operation for another needs no room; adding one is refused and changes nothing.
    await ok(t, token, 'POST', '/core/app/httpPlugin/update', { appId: http, name: 'two ops', pluginData: { apiSchemaStr: schema('a', 'c') } });
    const grow = await call(t, token, 'POST', '/core/app/httpPlugin/update', { appId: http, name: 'two ops', pluginData: { apiSchemaStr: schema('a', 'c', 'd') } });
    expect(grow.status).toBe(403);
    const names = (await ok(t, token, 'POST', '/core/app/list', { parentId: http })).map((a: { name: string }) => a.name).sort();
    expect(names).toEqual(['a', 'c']);
    // Shrinking gives room back.
    await ok(t, token, 'POST', '/core/app/httpPlugin/update', { appId: http, name: 'two ops', pluginData: { apiSchemaStr: schema('a') } });
    expect(await counted(teamId)).toBe(2);
    const results = await Promise.all(Array.from({ length: 4 }, (_, i) => create(token, `room${i}`)));
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    // Deleting the container gives back its plugins' room, not its own.
    await ok(t, token, 'DELETE', '/core/app/del', { appId: http });
    const after = await Promise.all(Array.from({ length: 4 }, (_, i) => create(token, `after${i}`)));
    expect(after.filter((r) => r.status === 200)).toHaveLength(1);
    expect(await counted(teamId)).toBe(3);
  });
});
