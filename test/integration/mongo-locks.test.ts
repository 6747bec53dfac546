import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAppError } from '../../src/infra/errors.js';
import { createMongoLocks } from '../../src/infra/mongo-lock.js';
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
    const holding = first.withLock('sync:c1', () => held);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const refused = await second.withLock('sync:c1', async () => 'ran', 'This collection is being synced already, try again').catch((error: unknown) => error);
    expect(isAppError(refused) && [refused.httpStatus, refused.message]).toEqual([409, 'This collection is being synced already, try again']);
    const other = await second.withLock('sync:c2', async () => 'ran');
    expect(other).toBe('ran');
    release();
    await holding;
    expect(await second.withLock('sync:c1', async () => 'ran')).toBe('ran');
  });
});
