/**
 * Two processes must never both change a team's app tree: a holder of the tree lock that stalled
 * past its lease (and whose lock another process took over) stops before its next write. A
 * folder delete leaves the top of its subtree for a retry, each deleted app's plan room given
 * back once; a create into a folder does not land in a folder deleted meanwhile.
 */
import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LockHold } from '../../src/infra/mongo-lock.js';
import { settleExpiredInserts } from '../../src/platform/apps/app-insert-resume.js';
import { CHAT_APP_TYPES } from '../../src/platform/apps/apps.schema.js';
import { type AppsDeps, createAppsCore } from '../../src/platform/apps/apps.service.js';
import type { AuthContext } from '../../src/platform/auth/types.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { expectStopped, type HeldBy, stallPastLease as stallPastLeaseOf } from '../helpers/lock-loss.js';
import { createUser, login } from '../helpers/platform.js';
import { createApp, createFolder, ok, simpleNodes } from './apps-helpers.js';

let t: TestApp;
let token: string;
let teamId: string;
let auth: AuthContext;

beforeAll(async () => {
  t = await buildTestApp();
  const user = await createUser(t, { username: 'tree-lock-loss', password: 'password-1' });
  teamId = user.teamId;
  auth = { ...(await t.app.identity.memberContext(user.tmbId))!, authType: 'token' };
  token = await login(t, 'tree-lock-loss', 'password-1');
});
afterAll(() => t.close());

/** The apps core of a process that stalls somewhere in `change`; its tree lock's hold lands in `held`. */
function stallingCore(held: HeldBy, change: (deps: AppsDeps) => Partial<AppsDeps>) {
  const deps = t.app.apps.deps;
  const withTeamLock = <T>(team: string, run: (lock: LockHold) => Promise<T>) =>
    deps.perms.tree.withTeamLock(team, (lock) => {
      held.lock = lock;
      return run(lock);
    });
  return createAppsCore({ ...deps, perms: { ...deps.perms, tree: { ...deps.perms.tree, withTeamLock } }, ...change(deps) });
}

/** The holder stalls past its lease while `other` (another process) takes the team's app-tree lock. */
const stallPastLease = (held: HeldBy, other: () => Promise<unknown>) => stallPastLeaseOf(t.app.mongo.db, `apps:${teamId}`, held, other);

const counter = async () => (await t.app.mongo.db.collection<{ _id: string; count: number }>('team_counters').findOne({ _id: `apps:${teamId}` }))?.count;
const stored = (ids: string[]) => Promise.all(ids.map(async (id) => (await t.app.apps.deps.apps.findById(id)) !== null));

describe('app tree changes under a lost tree lock', () => {
  it('a folder delete stops before its next level; the top of the subtree stays for a retry, and each app gives its room back once', async () => {
    const root = await createFolder(t, token, 'doomed');
    const sub = await createFolder(t, token, 'doomed/sub', root);
    const deepest = [await createApp(t, token, { name: 'deep-1', parentId: sub }), await createApp(t, token, { name: 'deep-2', parentId: sub })];
    const moved = await createApp(t, token, { name: 'moved', parentId: root });
    await createApp(t, token, { name: 'kept' });
    const before = (await counter())!;
    const held: HeldBy = {};
    const holder = stallingCore(held, (deps) => ({
      apps: {
        ...deps.apps,
        async deleteLevels(team, levels, each) {
          // Stalls past its lease once the deepest level is gone; meanwhile another process moves
          // an app out of the subtree (the holder read it inside).
          await deps.apps.deleteLevels(team, levels.slice(0, 1), each);
          await stallPastLease(held, () => ok(t, token, 'PUT', `/core/app/update?appId=${moved}`, { parentId: null }));
          await deps.apps.deleteLevels(team, levels.slice(1), each);
        },
      },
    }));

    await expectStopped(() => holder.deleteTree(teamId, root));
    expect(await stored(deepest)).toEqual([false, false]);
    expect(await stored([sub, root])).toEqual([true, true]);
    expect((await t.app.apps.deps.apps.findById(moved))?.parentId).toBeNull();
    // The two apps deleted gave their room back; the moved one still counts.
    expect(await counter()).toBe(before - 2);

    await ok(t, token, 'DELETE', '/core/app/del', { appId: root });
    expect(await stored([sub, root, moved])).toEqual([false, false, true]);
    expect(await counter()).toBe(before - 2);
    expect(await counter()).toBe(await t.app.apps.deps.apps.countByTypes(teamId, CHAT_APP_TYPES));
  });

  it('a folder delete that lost the lock while deleting dependents stops before the next ones (an app moved out keeps its versions)', async () => {
    const root = await createFolder(t, token, 'doomed-2');
    const moved = await createApp(t, token, { name: 'moved-2', parentId: root });
    const held: HeldBy = {};
    const holder = stallingCore(held, (deps) => ({
      // Stalls past its lease in the first dependent deletion; meanwhile another process moves an app out.
      onDeleted: [() => stallPastLease(held, () => ok(t, token, 'PUT', `/core/app/update?appId=${moved}`, { parentId: null })), ...deps.onDeleted],
    }));

    await expectStopped(() => holder.deleteTree(teamId, root));
    expect(await stored([root, moved])).toEqual([true, true]);
    expect(await t.app.mongo.db.collection('app_versions').countDocuments({ appId: { $in: [moved, new ObjectId(moved)] } })).toBe(1);
  });

  it('a create into a folder stops before the app lands once the lock was lost (another process deleted the folder)', async () => {
    const folder = await createFolder(t, token, 'short-lived');
    const before = await counter();
    const held: HeldBy = {};
    let appId = '';
    const holder = stallingCore(held, (deps) => ({
      versions: {
        ...deps.versions,
        async insert(version) {
          appId = version.appId;
          const id = await deps.versions.insert(version);
          // Stalls past its lease before the app document; meanwhile another process deletes the folder.
          await stallPastLease(held, () => ok(t, token, 'DELETE', '/core/app/del', { appId: folder }));
          return id;
        },
      },
    }));

    await expectStopped(() => holder.insertApp(auth, { parentId: folder, name: 'orphan', type: 'simple', modules: simpleNodes }));
    expect(await stored([folder, appId])).toEqual([false, false]);
    // The insert was settled: its version removed, its reservation given back.
    expect(await t.app.mongo.db.collection('app_versions').countDocuments({ appId: { $in: [appId, new ObjectId(appId)] } })).toBe(0);
    expect(await counter()).toBe(before);
  });

  it("a create whose insert lease ran out while it stalled does not land after the sweep settled the insert", async () => {
    const before = await counter();
    let appId = '';
    const deps = t.app.apps.deps;
    const holder = createAppsCore({
      ...deps,
      versions: {
        ...deps.versions,
        async insert(version) {
          appId = version.appId;
          const id = await deps.versions.insert(version);
          // Stalls past its insert's lease: another process's sweep settles the insert (version gone, room back).
          await t.app.mongo.db.collection('app_inserts').updateOne({ _id: new ObjectId(appId) }, { $set: { expiresAt: new Date(Date.now() - 1000) } });
          expect(await settleExpiredInserts(t.app.apps.core, deps)).toBe(1);
          return id;
        },
      },
    });

    await expectStopped(() => holder.insertApp(auth, { parentId: null, name: 'settled meanwhile', type: 'simple', modules: simpleNodes }));
    // Landing now would leave an app without its version, and a plan counter one short.
    expect(await stored([appId])).toEqual([false]);
    expect(await counter()).toBe(before);
  });
});
