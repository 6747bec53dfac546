import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { isAppError } from '../../src/infra/errors.js';
import { createMongoLocks, LOCKS_COLLECTION, LockLostError } from '../../src/infra/mongo-lock.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';

describe('named locks', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('one holder at a time across processes; a waiter past its wait gets a 409 saying what it waited for', async () => {
    const first = createMongoLocks(t.app.mongo.db, { waitMs: 300 });
    const second = createMongoLocks(t.app.mongo.db, { waitMs: 300 });
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    // Waits until the first holds it (its first insert may create the collection: slow on FerretDB).
    let holds: () => void = () => undefined;
    const holdsNow = new Promise<void>((resolve) => {
      holds = resolve;
    });
    const holding = first.withLock('sync:c1', () => {
      holds();
      return held;
    });
    await holdsNow;
    const refused = await second.withLock('sync:c1', async () => 'ran', 'This collection is being synced already, try again').catch((error: unknown) => error);
    expect(isAppError(refused) && [refused.httpStatus, refused.message]).toEqual([409, 'This collection is being synced already, try again']);
    const other = await second.withLock('sync:c2', async () => 'ran');
    expect(other).toBe('ran');
    release();
    await holding;
    expect(await second.withLock('sync:c1', async () => 'ran')).toBe('ran');
  });

  it('a release that fails after the work does not turn its outcome into another error (the lock lapses by itself)', async () => {
    const client = new MongoClient(t.app.config.MONGODB_URI);
    const locks = createMongoLocks(client.db(), { waitMs: 300 });
    // The work lands, then the connection is gone before the release.
    const done = await locks.withLock('release-fails:1', async () => {
      await client.close();
      return 'landed';
    });
    expect(done).toBe('landed');
    const again = new MongoClient(t.app.config.MONGODB_URI);
    try {
      const failing = createMongoLocks(again.db(), { waitMs: 300 });
      const outcome = await failing
        .withLock('release-fails:2', async () => {
          await again.close();
          throw new Error('the work failed');
        })
        .catch((error: unknown) => error);
      expect((outcome as Error).message).toBe('the work failed');
    } finally {
      await again.close();
    }
  });

  it('a lock carries a payload: the taker of a lapsed lock learns its dead holder\'s, kept stored until the taker carries its own', async () => {
    const locks = createMongoLocks(t.app.mongo.db, { waitMs: 300 });
    const stored = async (key: string) => (await t.app.mongo.db.collection<{ _id: string; payload?: unknown }>(LOCKS_COLLECTION).findOne({ _id: key }))?.payload;
    const later = (minutes: number) => new Date(Date.now() + minutes * 60_000);

    const dying = await locks.acquire('job:1', { payload: { step: 'a' } });
    expect(dying.left).toBeNull();
    expect(await stored('job:1')).toEqual({ step: 'a' });
    // Killed: no more renewals, the lock stays. Live until it lapses.
    dying.abandon();
    expect(await locks.tryAcquire('job:1', { payload: { step: 'b' } })).toBeNull();
    expect(await locks.lapsed(later(1))).toContain('job:1');

    // A taker killed before it dealt with what it was left leaves that to the next one.
    const second = await locks.tryAcquire<{ step: string }>('job:1', { payload: { step: 'b' }, now: later(1) });
    expect(second?.left).toEqual({ step: 'a' });
    expect(await stored('job:1')).toEqual({ step: 'a' });
    second!.abandon();
    const third = await locks.tryAcquire<{ step: string }>('job:1', { payload: { step: 'c' }, now: later(2) });
    expect(third?.left).toEqual({ step: 'a' });
    await third!.carry({ step: 'c' });
    expect(await stored('job:1')).toEqual({ step: 'c' });
    await third!.carry(null);
    expect(await stored('job:1')).toBeUndefined();
    await third!.release();
    expect(await t.app.mongo.db.collection(LOCKS_COLLECTION).countDocuments({ _id: 'job:1' as never })).toBe(0);

    // A dead holder that left nothing: the taker's own payload is stored at once.
    (await locks.acquire('job:2')).abandon();
    const taker = await locks.tryAcquire('job:2', { payload: { step: 'x' }, now: later(1) });
    expect(taker?.left).toBeNull();
    expect(await stored('job:2')).toEqual({ step: 'x' });
    await taker!.release();
    expect(await locks.withLock('job:2', async () => 'ran')).toBe('ran');
  });

  it('a holder whose lapsed lock another process took over hears it at its next renewal, and its work stops before its next write', async () => {
    const lockDocs = t.app.mongo.db.collection<{ _id: string; holder: string; expiresAt: Date }>(LOCKS_COLLECTION);
    // Renewals on demand; the holder's own trust never runs out here, so only its renewal can tell it.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      const holder = createMongoLocks(t.app.mongo.db, { monotonic: () => 0 });
      const other = createMongoLocks(t.app.mongo.db);
      const writes: string[] = [];
      let taker: Awaited<ReturnType<typeof other.tryAcquire>> = null;
      const work = holder.withLock('tree:lost', async (lock) => {
        lock.assertHeld();
        writes.push('first');
        // The holder stalls past its lease: the other process finds the lock lapsed and takes it.
        await lockDocs.updateOne({ _id: 'tree:lost' }, { $set: { expiresAt: new Date(0) } });
        taker = await other.tryAcquire('tree:lost');
        expect(taker).not.toBeNull();
        // Its next renewal (every third of the 15 s lease) matches nothing.
        await vi.advanceTimersByTimeAsync(5_000);
        await vi.waitFor(() => expect(() => lock.assertHeld()).toThrow(/another process took it over/));
        lock.assertHeld();
        writes.push('second');
      });
      await expect(work).rejects.toMatchObject({ name: 'LockLostError', key: 'tree:lost' });
      expect(writes).toEqual(['first']);
      // Its release leaves the new holder's lock alone.
      expect(await lockDocs.countDocuments({ _id: 'tree:lost' })).toBe(1);
      await taker!.release();
      expect(await lockDocs.countDocuments({ _id: 'tree:lost' })).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('a holder none of whose renewals went through for most of the lease stops trusting its lock', async () => {
    let elapsed = 0;
    const locks = createMongoLocks(t.app.mongo.db, { monotonic: () => elapsed });
    const lock = await locks.acquire('tree:stalled');
    elapsed += 1_000;
    lock.assertHeld();
    // A stalled event loop or an unreachable database: a taker may find the lock lapsed by now.
    elapsed += 14_000;
    expect(() => lock.assertHeld()).toThrow(LockLostError);
    await lock.release();
  });
});
