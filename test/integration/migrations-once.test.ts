import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIGRATIONS, runMigrationOnce } from '../../src/infra/mongo.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';

describe('runMigrationOnce', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('records a finished migration once and skips it afterwards; an unfinished one runs again', async () => {
    const runs: string[] = [];
    const migration = (name: string, finishes: boolean) => async () => {
      runs.push(name);
      return finishes;
    };
    expect(await runMigrationOnce(t.app.mongo.db, 'test-unfinished', migration('unfinished', false))).toBe(false);
    expect(await runMigrationOnce(t.app.mongo.db, 'test-once', migration('once', true))).toBe(true);
    expect(await runMigrationOnce(t.app.mongo.db, 'test-once', migration('once again', true))).toBe(true);
    expect(await runMigrationOnce(t.app.mongo.db, 'test-unfinished', migration('unfinished again', true))).toBe(true);
    expect(runs).toEqual(['unfinished', 'once', 'unfinished again']);
  });

  it('succeeds in every process when several finish the same migration at the same moment', async () => {
    // Replicas starting together: each finds no record, migrates, then records it; the records'
    // upserts race, and the one refused a duplicate key must not fail its process's start-up.
    const ids = Array.from({ length: 20 }, (_, i) => `test-race-${i}`);
    const results = await Promise.allSettled(ids.flatMap((id) => Array.from({ length: 3 }, () => runMigrationOnce(t.app.mongo.db, id, async () => true))));
    expect(results.filter((result) => result.status === 'rejected')).toEqual([]);
    expect(await t.app.mongo.db.collection(MIGRATIONS).countDocuments({ _id: { $in: ids } } as never)).toBe(ids.length);
  });
});
