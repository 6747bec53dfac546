import { describe, expect, it } from 'vitest';
import { LEASES_PRUNED_PAST, StampLeases } from '../../src/infra/version-stamps.js';

/** The leases of version stamps: one per key ever read, so expired ones must not be kept forever. */
describe('version stamp leases stay bounded', () => {
  it('keys read once and expired are dropped once the map passes its bound', () => {
    let clock = 0;
    const leases = new StampLeases(() => clock);
    for (let i = 0; i < 100_000; i++) {
      leases.set(`dataset-data:${i}`, 'v', clock + 100);
      clock += 1; // each lease expires 100 reads later
    }
    expect(leases.size).toBeLessThanOrEqual(LEASES_PRUNED_PAST + 1);
    // The leases still running are kept and answer without a database read.
    expect(leases.valueAt('dataset-data:99999', clock)).toBe('v');
    expect(leases.valueAt('dataset-data:0', clock)).toBeUndefined();
  });

  it('live leases are never dropped, however many', () => {
    const clock = 0;
    const leases = new StampLeases(() => clock);
    const n = LEASES_PRUNED_PAST * 3;
    for (let i = 0; i < n; i++) leases.set(`k${i}`, `v${i}`, 1_000);
    expect(leases.size).toBe(n);
    expect(leases.valueAt('k0', clock)).toBe('v0');
    expect(leases.valueAt(`k${n - 1}`, clock)).toBe(`v${n - 1}`);
  });

  it('a process with many live keys prunes once per doubling, not on every insert', () => {
    let prunes = 0;
    const clock = 0;
    // Counting clock reads counts prunes: a lookup is given its time, only a prune reads the clock.
    const leases = new StampLeases(() => {
      prunes += 1;
      return clock;
    });
    for (let i = 0; i < LEASES_PRUNED_PAST * 4; i++) leases.set(`k${i}`, 'v', 1_000_000);
    expect(prunes).toBeLessThanOrEqual(3);
  });
});
