import { ObjectId } from 'mongodb';
import { afterEach, describe, expect, it } from 'vitest';
import { openTestDatabase, platformCaller, type RealServer, startRealServer, waitFor } from '../helpers/real-process.js';
import { access, addMembers, listedIds, PASSWORD, whoAmI, workflow } from './crash-apps-helpers.js';

/**
 * `kill -9` during a folder move and during an app copy, then a restart on the same database:
 * what users see is the state before or the state after, never a mix (docs/apps.md, Crash
 * safety).
 */
let server: RealServer | undefined;
let database: Awaited<ReturnType<typeof openTestDatabase>> | undefined;

afterEach(async () => {
  await server?.kill9();
  server = undefined;
  await database?.close();
  database = undefined;
});

const oid = (id: string) => new ObjectId(id);

describe('kill -9 during a folder move', () => {
  it('shows the folder at its new place with the new permissions down its whole subtree after a restart', { timeout: 300_000 }, async () => {
    database = await openTestDatabase();
    const { db } = database;
    server = await startRealServer(database.uri);
    let root = await platformCaller(server);
    const { teamId } = await whoAmI(root);
    const members = await addMembers(db, teamId, ['alice', 'bob', 'carol', 'dave']);
    const folder = (name: string, parentId: string | null) => root.ok<string>('POST', '/core/app/create', { name, type: 'folder', parentId, modules: [] });

    // OLD shares with alice (read), NEW with bob (write), carol and dave (read); F inherits OLD's
    // rows down 84 folders (three levels of four below it).
    const oldParent = await folder('OLD', null);
    const newParent = await folder('NEW', null);
    await root.ok('POST', '/core/app/collaborator/update', { appId: oldParent, tmbIds: [members.alice], permission: 4 });
    await root.ok('POST', '/core/app/collaborator/update', { appId: newParent, tmbIds: [members.bob], permission: 6 });
    await root.ok('POST', '/core/app/collaborator/update', { appId: newParent, tmbIds: [members.carol, members.dave], permission: 4 });
    const moved = await folder('F', oldParent);
    const subtree = [moved];
    let level = [moved];
    for (let depth = 0; depth < 3; depth++) {
      const next: string[] = [];
      for (const parentId of level) for (let i = 0; i < 4; i++) next.push(await folder(`F-${depth}-${i}`, parentId));
      subtree.push(...next);
      level = next;
    }
    const deepest = level[level.length - 1] as string;
    const plain = await root.ok<string>('POST', '/core/app/create', { name: 'deep app', type: 'advanced', parentId: deepest, ...workflow });

    let alice = await platformCaller(server, 'alice', PASSWORD);
    let bob = await platformCaller(server, 'bob', PASSWORD);
    for (const id of [moved, deepest, plain]) {
      expect(await access(alice, id)).toBe('read');
      expect(await access(bob, id)).toBe('none');
    }

    // The move rewrites the rows of all 85 folders: alice's go first (one delete), then NEW's
    // three are written one by one (255 upserts), then the folder moves. Killed once alice's
    // rows are gone.
    const rows = db.collection('resource_permissions');
    const aliceRows = () => rows.countDocuments({ resourceType: 'app', tmbId: oid(members.alice), resourceId: { $in: subtree.map(oid) } });
    expect(await aliceRows()).toBe(subtree.length);
    void root.call('POST', '/core/app/update', { appId: moved, parentId: newParent }).catch(() => undefined);
    await waitFor('the move to start rewriting rows', async () => (await aliceRows()) === 0, { intervalMs: 5 });
    await server.kill9();
    // The kill landed inside the move: its rows are half written and the folder has not moved.
    const stored = await db.collection('apps').findOne({ _id: oid(moved) });
    expect(stored?.parentId?.toHexString()).toBe(oldParent);
    const bobRows = await rows.countDocuments({ resourceType: 'app', tmbId: oid(members.bob), resourceId: { $in: subtree.map(oid) } });
    expect(bobRows).toBeLessThan(subtree.length);

    // The killed process's tree lock lapses 15 s after its last renewal and the restart's resume
    // waits for that: run its clock out instead.
    const treeLocks = db.collection<{ expiresAt: Date }>('resource_tree_locks');
    expect(await treeLocks.countDocuments({ expiresAt: { $gt: new Date() } })).toBeGreaterThan(0);
    await treeLocks.updateMany({}, { $set: { expiresAt: new Date(0) } });
    server = await startRealServer(database.uri);
    root = await platformCaller(server);
    alice = await platformCaller(server, 'alice', PASSWORD);
    bob = await platformCaller(server, 'bob', PASSWORD);
    // From the first request on: moved, with NEW's permissions everywhere below it.
    expect(await listedIds(root, newParent)).toEqual([moved]);
    expect(await listedIds(root, oldParent)).toEqual([]);
    for (const id of [moved, subtree[1] as string, deepest, plain]) {
      expect(await access(alice, id), `alice on ${id}`).toBe('none');
      expect(await access(bob, id), `bob on ${id}`).toBe('write');
    }
    expect(await listedIds(alice, oldParent)).toEqual([]);
    expect(await listedIds(bob, deepest)).toEqual([plain]);
    const collaborators = await root.ok<{ tmbId: string; permission: { value: number } }[]>('POST', '/core/app/collaborator/list', { appId: deepest });
    expect(collaborators.map((c) => [c.tmbId, c.permission.value]).sort()).toEqual(
      [
        [members.bob, 6],
        [members.carol, 4],
        [members.dave, 4],
      ].sort(),
    );
    expect(await rows.countDocuments({ resourceType: 'app', tmbId: oid(members.bob), resourceId: { $in: subtree.map(oid) } })).toBe(subtree.length);
    expect(await db.collection('resource_tree_changes').countDocuments({})).toBe(0);
  });
});

describe('kill -9 during an app copy', () => {
  it('shows no copy after a restart and gives its plan room back', { timeout: 180_000 }, async () => {
    database = await openTestDatabase();
    const { db } = database;
    const env = { PLAN_MAX_APPS: '3' };
    server = await startRealServer(database.uri, env);
    let root = await platformCaller(server);
    const { teamId } = await whoAmI(root);
    const members = await addMembers(db, teamId, ['alice']);
    const shared = await root.ok<string>('POST', '/core/app/create', { name: 'P', type: 'folder', parentId: null, modules: [] });
    await root.ok('POST', '/core/app/collaborator/update', { appId: shared, tmbIds: [members.alice], permission: 4 });
    const source = await root.ok<string>('POST', '/core/app/create', { name: 'S', type: 'advanced', parentId: shared, ...workflow });

    // The copy goes into P, so it waits for the team's app tree lock, held here: it has taken
    // its plan room and recorded itself, and is killed there.
    const locks = db.collection<{ _id: string; holder: string; expiresAt: Date }>('resource_tree_locks');
    await locks.insertOne({ _id: `apps:${teamId}`, holder: 'crash test', expiresAt: new Date(Date.now() + 10 * 60_000) });
    const inserts = db.collection('app_inserts');
    void root.call('POST', '/core/app/copy', { appId: source }).catch(() => undefined);
    await waitFor('the copy to record itself', async () => (await inserts.countDocuments({ teamId: oid(teamId) })) === 1, { intervalMs: 5 });
    await server.kill9();
    await locks.deleteOne({ _id: `apps:${teamId}`, holder: 'crash test' });
    // The killed copy's lease would run out 15 s after its last renewal: run its clock out instead.
    expect(await inserts.countDocuments({ expiresAt: { $gt: new Date() } })).toBe(1);
    await inserts.updateMany({}, { $set: { expiresAt: new Date(0) } });

    server = await startRealServer(database.uri, env);
    root = await platformCaller(server);
    const alice = await platformCaller(server, 'alice', PASSWORD);
    expect(await listedIds(root, shared)).toEqual([source]);
    expect(await listedIds(alice, shared)).toEqual([source]);
    await waitFor('the interrupted copy to be settled', async () => (await inserts.countDocuments({})) === 0, { timeoutMs: 60_000, intervalMs: 200 });

    // Counted once for what exists: S and two more copies fit in 3, a third does not.
    const copies: string[] = [];
    for (let i = 0; i < 2; i++) copies.push((await root.ok<{ appId: string }>('POST', '/core/app/copy', { appId: source })).appId);
    const refused = await root.call('POST', '/core/app/copy', { appId: source });
    expect(refused.status, refused.text).toBe(403);
    expect(refused.text).toContain('appAmountNotEnough');
    expect((await listedIds(root, shared)).sort()).toEqual([source, ...copies].sort());
    for (const copy of copies) {
      const detail = await root.ok<{ modules: unknown[]; edges: unknown[] }>('GET', `/core/app/detail?appId=${copy}`);
      expect({ modules: detail.modules, edges: detail.edges }).toEqual(workflow);
      expect((await root.ok<{ total: number }>('POST', '/core/app/version/list', { appId: copy, current: 1, pageSize: 10 })).total).toBe(1);
      expect(await access(alice, copy)).toBe('read');
    }
    // Nothing of the interrupted copy is left behind.
    const known = [shared, source, ...copies].map(oid);
    expect(await db.collection('app_versions').countDocuments({ appId: { $nin: known } })).toBe(0);
    expect(await db.collection('resource_permissions').countDocuments({ resourceType: 'app', resourceId: { $nin: known } })).toBe(0);
  });
});
