import type { InheritanceWrite } from '../../domain/permission-inheritance.js';
import { AppError } from '../../infra/errors.js';
import { type LockHold, LockLostError } from '../../infra/mongo-lock.js';
import { bumpAfterWrite } from '../../infra/version-stamps.js';
import type { ResourcePermissionsRepo } from './resource-permissions.repo.js';
import type { ResourceTreeRepo } from './resource-tree.repo.js';
import type { TreeChangesRepo } from './tree-changes.repo.js';

export interface PermissionWriterDeps {
  rows: ResourcePermissionsRepo;
  /** The tree repository as created (its lock does not finish pending changes). */
  tree: ResourceTreeRepo;
  changes: TreeChangesRepo;
  onChange?: (teamId: string) => Promise<void>;
  now: () => Date;
}

/**
 * Journaled: a change that touches several documents (or deletes rows before writing them), so a
 * crash cannot leave it half done; and an unguarded one-document change, so a crash between its
 * write and the read models' stamp bump is replayed and bumped by the next sweep (other
 * processes judge permissions on those read models: without the record they would keep the old
 * permissions until their 5-minute safety net). A one-document move guarded by its expected
 * parent is not journaled: a replay would drop the guard.
 */
const journaled = (writes: InheritanceWrite[], expectedParentId: string | null | undefined) =>
  writes.length > 1 || writes.some((write) => write.kind === 'replaceCollaborators') || expectedParentId === undefined;

/**
 * Applies the writes of the inheritance transitions so that a crash cannot leave a change half
 * done where users see it, or done but unseen by other processes. A change is recorded in the
 * journal first (see `journaled`), then written, then the stamp is bumped, then its record is deleted. An unfinished record is applied again (every write is
 * idempotent: replace = delete then upsert, `$set`s) by the next holder of the team's tree lock
 * before it does anything else, and at start-up before the service listens. Every permission
 * write happens under that lock, so a record is always finished before any later change is
 * decided: replaying it never undoes newer work.
 */
export function createPermissionWriter(deps: PermissionWriterDeps) {
  const { rows, tree, changes } = deps;

  /** Runs a write and then tells the read models, whether the write went through or not. */
  function changing<T>(teamId: string, write: () => Promise<T>): Promise<T> {
    return bumpAfterWrite(write, async () => deps.onChange?.(teamId));
  }

  /**
   * `expectedParentId` guards the final resource write (false when it no longer matches). Stops
   * before any write once the tree lock was lost: its new holder finishes the recorded change.
   */
  async function applyWrites(lock: LockHold, teamId: string, writes: InheritanceWrite[], expectedParentId?: string | null): Promise<boolean> {
    for (const write of writes) {
      lock.assertHeld();
      if (write.kind === 'replaceCollaborators') await rows.replace(teamId, write.resourceIds, write.collaborators);
      else if (write.kind === 'upsertCollaborators') await rows.upsert(teamId, write.resourceId, write.collaborators);
      else if (write.kind === 'removeCollaborators') await rows.remove(teamId, write.resourceId, write.tmbIds);
      else if (write.kind === 'setDefaultPermission') await tree.setDefaultPermission(teamId, write.resourceIds, write.defaultPermission);
      else if (!(await tree.updateResource(teamId, write.resourceId, write.set, expectedParentId))) return false;
    }
    return true;
  }

  /** Applies the team's unfinished changes, oldest first; the caller holds the team's tree lock. */
  async function finishPending(lock: LockHold, teamId: string): Promise<number> {
    const pending = await changes.pending(teamId);
    for (const change of pending) {
      // No parent guard on a replay: the resource may already stand where the change puts it.
      await changing(teamId, () => applyWrites(lock, teamId, change.writes));
      await changes.finish(change.id);
    }
    return pending.length;
  }

  const writer = {
    changing,

    /** Applies `writes` under the caller's tree `lock`; false when the parent guard failed. */
    async apply(lock: LockHold, teamId: string, writes: InheritanceWrite[], expectedParentId?: string | null): Promise<boolean> {
      if (writes.length === 0) return true;
      if (!journaled(writes, expectedParentId)) return changing(teamId, () => applyWrites(lock, teamId, writes, expectedParentId));
      lock.assertHeld();
      const id = await changes.record(teamId, writes, deps.now());
      // A failure from here leaves the record: the change is finished later, never half kept.
      const done = await changing(teamId, () => applyWrites(lock, teamId, writes, expectedParentId));
      await changes.finish(id);
      return done;
    },

    /** The team's tree lock; whoever takes it first finishes what an interrupted holder left. */
    withTeamLock<T>(teamId: string, run: (lock: LockHold) => Promise<T>): Promise<T> {
      return tree.withTeamLock(teamId, async (lock) => {
        await finishPending(lock, teamId);
        return run(lock);
      });
    },

    /**
     * Finishes every team's interrupted changes, each under its tree lock (the lock of a crashed
     * holder expires within its TTL). `createdBefore` leaves changes a live request may still be
     * writing to that request. Returns the teams done and those whose lock stayed busy (409) or
     * was taken over meanwhile (its new holder finishes them first).
     */
    async finishInterrupted(options: { createdBefore?: Date; stopped?: () => boolean } = {}): Promise<{ finished: number; busy: number }> {
      let finished = 0;
      let busy = 0;
      for (const teamId of await changes.teamsWithPending(options.createdBefore)) {
        if (options.stopped?.()) break;
        try {
          await writer.withTeamLock(teamId, async () => undefined);
          finished += 1;
        } catch (error) {
          if (!((error instanceof AppError && error.httpStatus === 409) || error instanceof LockLostError)) throw error;
          busy += 1;
        }
      }
      return { finished, busy };
    },
  };
  return writer;
}

export type PermissionWriter = ReturnType<typeof createPermissionWriter>;
