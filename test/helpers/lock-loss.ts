import type { Db } from 'mongodb';
import { expect, vi } from 'vitest';
import { LOCKS_COLLECTION, type LockHold } from '../../src/infra/mongo-lock.js';
import type { DatasetsContext } from '../../src/platform/datasets/context.js';

/** Where a stalling holder's lock hold lands once it took the lock. */
export interface HeldBy {
  lock?: LockHold;
}

/**
 * The holder of `key` stalls past its lease: `other` (another process) finds the lock lapsed and
 * takes it, and the holder's next renewal (every third of the 15 s lease; the test's fake
 * intervals move it) matches nothing, so its hold reports the takeover.
 */
export async function stallPastLease(db: Db, key: string, held: HeldBy, other: () => Promise<unknown>, collection = LOCKS_COLLECTION): Promise<void> {
  await db.collection<{ _id: string; expiresAt: Date }>(collection).updateOne({ _id: key }, { $set: { expiresAt: new Date(0) } });
  await other();
  await vi.advanceTimersByTimeAsync(5_000);
  await vi.waitFor(() => expect(() => held.lock?.assertHeld()).toThrow(/another process took it over/));
}

/** Runs `run` with lock renewals on fake intervals (the stalls move them); it must reject with `failure`. */
export async function expectStopped(run: () => Promise<unknown>, failure: object = { name: 'LockLostError' }): Promise<void> {
  vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
  try {
    await expect(run()).rejects.toMatchObject(failure);
  } finally {
    vi.useRealTimers();
  }
}

/** The datasets context `ctx` of a process whose tree and sync locks land in `held`, changed by `change`. */
export function stallingContext(ctx: DatasetsContext, held: HeldBy, change: (ctx: DatasetsContext) => Partial<DatasetsContext>): DatasetsContext {
  const holding =
    (take: DatasetsContext['withCollectionTree']): DatasetsContext['withCollectionTree'] =>
    (id, run) =>
      take(id, (lock) => {
        held.lock = lock;
        return run(lock);
      });
  return { ...ctx, withDatasetTree: holding(ctx.withDatasetTree), withCollectionTree: holding(ctx.withCollectionTree), withLinkSync: holding(ctx.withLinkSync), ...change(ctx) };
}

/** `fn`, whose first call stalls once it has answered. */
export function stallingOnce<A extends unknown[], R>(fn: (...args: A) => Promise<R>, stall: () => Promise<unknown>): (...args: A) => Promise<R> {
  let stalled = false;
  return async (...args) => {
    const result = await fn(...args);
    if (!stalled) {
      stalled = true;
      await stall();
    }
    return result;
  };
}

type Repositories = DatasetsContext['repos'];

/** A stallingContext change: `repos[repository][method]` stalls once, after its first answer (stallingOnce). */
export function stallingRepository<R extends keyof Repositories>(repository: R, method: keyof Repositories[R] & string, stall: () => Promise<unknown>) {
  return (ctx: DatasetsContext): Partial<DatasetsContext> => {
    const repo = ctx.repos[repository];
    const original = repo[method] as (...args: unknown[]) => Promise<unknown>;
    return { repos: { ...ctx.repos, [repository]: { ...repo, [method]: stallingOnce(original, stall) } } };
  };
}
