/**
 * Two processes must never both rewrite a team's permission rows: a holder of the team's tree
 * lock that stalled past its lease (and whose lock another process took over) stops before its
 * next write, and the process that took the lock finishes the recorded change.
 */
import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InheritanceWrite } from '../../src/domain/permission-inheritance.js';
import { createPermissionWriter } from '../../src/platform/permissions/permission-writes.js';
import { createResourcePermissionsRepo, type ResourcePermissionsRepo } from '../../src/platform/permissions/resource-permissions.repo.js';
import { createResourceTreeRepo } from '../../src/platform/permissions/resource-tree.repo.js';
import { createTreeChangesRepo } from '../../src/platform/permissions/tree-changes.repo.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { expectStopped, type HeldBy, stallPastLease } from '../helpers/lock-loss.js';

const TREE = 'lock_loss_resources';

describe('permission changes under a lost tree lock', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  const writerOver = (rows: ResourcePermissionsRepo) =>
    createPermissionWriter({
      rows,
      tree: createResourceTreeRepo(t.app.mongo.db, TREE, ['folder']),
      changes: createTreeChangesRepo(t.app.mongo.db, 'dataset'),
      now: () => new Date(),
    });

  it('a holder that stalled past its lease and lost the lock stops before its next write; the new holder finishes the change', async () => {
    const db = t.app.mongo.db;
    const rows = createResourcePermissionsRepo(db, 'dataset');
    const teamId = new ObjectId().toHexString();
    const [folder, child, member] = [new ObjectId(), new ObjectId(), new ObjectId()].map((id) => id.toHexString()) as [string, string, string];
    const writes: InheritanceWrite[] = [folder, child].map((resourceId) => ({ kind: 'upsertCollaborators', resourceId, collaborators: [{ tmbId: member, permission: 4 }] }));
    const other = writerOver(rows);
    const held: HeldBy = {};
    const upsertsByHolder: string[] = [];
    const holder = writerOver({
      ...rows,
      async upsert(team, resourceId, collaborators) {
        upsertsByHolder.push(resourceId);
        await rows.upsert(team, resourceId, collaborators);
        if (upsertsByHolder.length > 1) return;
        // Stalled after its first write, past its lease: the other process finds the lock lapsed,
        // takes it, and first finishes the change the holder recorded.
        await stallPastLease(db, `${TREE}:${teamId}`, held, () => other.withTeamLock(teamId, async () => undefined));
      },
    });

    await expectStopped(() =>
      holder.withTeamLock(teamId, async (lock) => {
        held.lock = lock;
        return holder.apply(lock, teamId, writes);
      }),
    );
    expect(upsertsByHolder).toEqual([folder]);
    expect(await rows.listByResource(teamId, child)).toEqual([{ tmbId: member, permission: 4 }]);
    expect(await createTreeChangesRepo(db, 'dataset').pending(teamId)).toEqual([]);
  });
});
