import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CommandFailedEvent, CommandStartedEvent, CommandSucceededEvent } from 'mongodb';
import { createVersionStamps, STAMPS_REPLACED_AT_ONCE } from '../../src/infra/version-stamps.js';
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

  it('a bump of many keys (a dataset delete names every collection) keeps a few updates in flight, not all', async () => {
    const client = t.app.mongo.client;
    let inFlight = 0;
    let most = 0;
    const started = (event: CommandStartedEvent) => {
      if (event.commandName !== 'update') return;
      inFlight += 1;
      most = Math.max(most, inFlight);
    };
    const ended = (event: CommandSucceededEvent | CommandFailedEvent) => {
      if (event.commandName === 'update') inFlight -= 1;
    };
    client.on('commandStarted', started);
    client.on('commandSucceeded', ended);
    client.on('commandFailed', ended);
    try {
      const stamps = createVersionStamps(t.app.mongo.db, { leaseMs: 0 });
      const keys = Array.from({ length: 60 }, (_, i) => `many:${i}`);
      const before = await Promise.all(keys.map((key) => stamps.read(key)));
      await stamps.bump(...keys);
      const after = await Promise.all(keys.map((key) => stamps.read(key)));
      expect(after.every((value, i) => value !== before[i])).toBe(true);
    } finally {
      client.off('commandStarted', started);
      client.off('commandSucceeded', ended);
      client.off('commandFailed', ended);
    }
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(STAMPS_REPLACED_AT_ONCE);
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
    const stamps = createVersionStamps(t.app.mongo.db, { leaseMs: 100, monotonic: () => clock });
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

  it('a lease runs on the monotonic clock: a wall clock stepped back does not stretch it, nor one stepped forward cut it', async () => {
    let wall = Date.UTC(2030, 0, 1);
    let elapsed = 0;
    const stamps = createVersionStamps(t.app.mongo.db, { leaseMs: 100, now: () => wall, monotonic: () => elapsed });
    const reads = async (run: () => Promise<unknown>) => (await commandsDuring(t.app, run)).filter((c) => c.collection === 'version_stamps').length;
    expect(await reads(() => stamps.read('k5'))).toBe(1);
    // NTP steps the wall clock back by far more than the lease; the lease still ends on time.
    wall -= 60_000;
    elapsed += 50;
    expect(await reads(() => stamps.read('k5'))).toBe(0);
    elapsed += 50;
    expect(await reads(() => stamps.read('k5'))).toBe(1);
    // Stepped forward: the lease just taken still holds.
    wall += 3_600_000;
    expect(await reads(() => stamps.read('k5'))).toBe(0);
  });
});
