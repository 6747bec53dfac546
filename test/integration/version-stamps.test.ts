import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVersionStamps } from '../../src/infra/version-stamps.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { commandsDuring } from '../helpers/command-counter.js';

describe('version stamps', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('a bump through one process is seen by another at once when it resolves', async () => {
    const writer = createVersionStamps(t.app.mongo.db, { leaseMs: 200 });
    const reader = createVersionStamps(t.app.mongo.db, { leaseMs: 200 });
    const before = await reader.read('k1');
    expect(await reader.read('k1')).toBe(before);
    await writer.bump('k1');
    const after = await reader.read('k1');
    expect(after).not.toBe(before);
    expect(await writer.read('k1')).toBe(after);
  });

  it('reads inside a lease cost no command; concurrent readers share one', async () => {
    const stamps = createVersionStamps(t.app.mongo.db, { leaseMs: 60_000 });
    const commands = await commandsDuring(t.app, async () => {
      await Promise.all([stamps.read('k2'), stamps.read('k2'), stamps.read('k2')]);
      await stamps.read('k2');
    });
    expect(commands.filter((c) => c.collection === 'version_stamps')).toHaveLength(1);
  });

  it('without a lease every read asks the database; concurrent bumps both change the value', async () => {
    const stamps = createVersionStamps(t.app.mongo.db, { leaseMs: 0 });
    const first = await stamps.read('k3');
    await Promise.all([stamps.bump('k3'), stamps.bump('k3')]);
    const second = await stamps.read('k3');
    expect(second).not.toBe(first);
    const commands = await commandsDuring(t.app, () => stamps.read('k3'));
    expect(commands).toEqual([{ name: 'find', collection: 'version_stamps', key: 'k3' }]);
  });

  it('a read sent before a bump resolved is not shared with a reader arriving after it', async () => {
    let clock = 1_000;
    const stamps = createVersionStamps(t.app.mongo.db, { leaseMs: 100, now: () => clock });
    const commands = await commandsDuring(t.app, async () => {
      const early = stamps.read('k4');
      // Still in flight, but a bump elsewhere may have resolved once its lease ran out.
      clock += 100;
      const late = stamps.read('k4');
      const joined = stamps.read('k4');
      await Promise.all([early, late, joined]);
    });
    expect(commands.filter((c) => c.collection === 'version_stamps')).toHaveLength(2);
  });
});
