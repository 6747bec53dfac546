/**
 * A counter's lock makes each change alone (FerretDB runs a conditional update as read-then-write,
 * so two at once can lose one), a quiet counter's recount included. A reservation whose recount stalled past the lock's lease, while
 * another process took the lock over, writes nothing after it: its caller's answer fails (503),
 * the count stays right, and a retry reserves.
 */
import { type Db, ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createMongoLocks, type HeldLock, LOCKS_COLLECTION } from '../../src/infra/mongo-lock.js';
import { createTeamCountersRepo } from '../../src/platform/identity/team-counters.repo.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';

interface CounterDoc {
  _id: string;
  count: number;
  reservedAt: Date;
}

describe('team counters under a lost lock', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  /**
   * The database as the holder sees it, counting its lock writes that matched nothing: a renewal
   * that found the lock taken over (the test waits for it; the holder's hold is not reachable).
   */
  function watchingLockWrites(db: Db) {
    const locks = db.collection(LOCKS_COLLECTION);
    const missed = { count: 0 };
    const watched = Object.assign(Object.create(locks), {
      async updateOne(...args: Parameters<typeof locks.updateOne>) {
        const result = await locks.updateOne(...args);
        if (result.matchedCount === 0) missed.count += 1;
        return result;
      },
    });
    return { db: { collection: (name: string) => (name === LOCKS_COLLECTION ? watched : db.collection(name)) } as unknown as Db, missed };
  }

  // At the limit (5) and quiet for two minutes, the counter over-counts by 2: a refused reservation
  // recounts (3). Without a counter, it is counted in full (3) and inserted, which needs no lock.
  it.each([
    { counter: 'a quiet counter', stored: 5, after: 5 },
    { counter: 'no counter yet', stored: undefined, after: 3 },
  ])('with $counter, a reservation whose recount outlived its lock writes nothing after it', async ({ stored, after }) => {
    const db = t.app.mongo.db;
    const _id = `apps:${new ObjectId().toHexString()}`;
    const counters = db.collection<CounterDoc>('team_counters');
    if (stored !== undefined) await counters.insertOne({ _id, count: stored, reservedAt: new Date(Date.now() - 120_000) });
    const { db: holderDb, missed } = watchingLockWrites(db);
    const holder = createTeamCountersRepo(holderDb);
    const teamId = _id.slice('apps:'.length);
    let other: HeldLock<unknown> | undefined;
    const stallingRecount = async () => {
      // Stalled in the recount past its lease: another process takes the counter's lock and holds
      // it (in the middle of its own change), and the holder's next renewal matches nothing.
      await db.collection<{ _id: string; expiresAt: Date }>(LOCKS_COLLECTION).updateOne({ _id: `team_counters:${_id}` }, { $set: { expiresAt: new Date(0) } });
      other = await createMongoLocks(db).acquire(`team_counters:${_id}`);
      await vi.advanceTimersByTimeAsync(5_000);
      await vi.waitFor(() => expect(missed.count).toBeGreaterThan(0));
      return 3;
    };

    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      await expect(holder.reserve('apps', teamId, 1, 5, new Date(), stallingRecount)).rejects.toMatchObject({ name: 'LockLostError' });
      expect((await counters.findOne({ _id }))?.count).toBe(after);
    } finally {
      await other?.release();
      vi.useRealTimers();
    }
    // The caller's retry reserves on the right count.
    await expect(holder.reserve('apps', teamId, 1, 5, new Date(), async () => 3)).resolves.toBeUndefined();
    expect((await counters.findOne({ _id }))?.count).toBe(4);
  });

  it("a quiet counter's recount writes under the counter's lock: a change made under it meanwhile is kept", async () => {
    const db = t.app.mongo.db;
    const _id = `vectors:${new ObjectId().toHexString()}`;
    const counters = db.collection<CounterDoc>('team_counters');
    await counters.insertOne({ _id, count: 10, reservedAt: new Date(Date.now() - 120_000) });
    // Another process is in the middle of a change of the counter when the recount is done.
    const other = await createMongoLocks(db).acquire(`team_counters:${_id}`);
    const correcting = createTeamCountersRepo(db).correct('vectors', _id.slice('vectors:'.length), new Date(), async () => 7);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await counters.updateOne({ _id }, { $inc: { count: 2 } });
    await other.release();
    // The recount answers what it counted, and writes it only over the count it read: the change stays.
    await expect(correcting).resolves.toBe(7);
    expect((await counters.findOne({ _id }))?.count).toBe(12);
  });
});
