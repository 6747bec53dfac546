import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startLeaseRenewal, withLeaseRenewal } from '../../src/infra/lease-renewal.js';

describe('lease renewal', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('renews every interval while the work runs, and not after it settled', async () => {
    let renewals = 0;
    let finish: (value: string) => void = () => undefined;
    const result = withLeaseRenewal(
      1000,
      async () => {
        renewals += 1;
      },
      () => new Promise<string>((resolve) => (finish = resolve)),
    );
    await vi.advanceTimersByTimeAsync(999);
    expect(renewals).toBe(0);
    await vi.advanceTimersByTimeAsync(2001);
    expect(renewals).toBe(3);
    finish('done');
    await expect(result).resolves.toBe('done');
    await vi.advanceTimersByTimeAsync(10_000);
    expect(renewals).toBe(3);
  });

  it('stops renewing when the work fails, and passes its error on', async () => {
    let renewals = 0;
    let fail: (error: Error) => void = () => undefined;
    const result = withLeaseRenewal(
      1000,
      async () => {
        renewals += 1;
      },
      () => new Promise<never>((_, reject) => (fail = reject)),
    );
    await vi.advanceTimersByTimeAsync(1000);
    fail(new Error('write failed'));
    await expect(result).rejects.toThrow('write failed');
    await vi.advanceTimersByTimeAsync(10_000);
    expect(renewals).toBe(1);
  });

  it('keeps renewing after a renewal fails, until stopped', async () => {
    let renewals = 0;
    const renewal = startLeaseRenewal(1000, async () => {
      renewals += 1;
      if (renewals === 1) throw new Error('database unreachable');
    });
    await vi.advanceTimersByTimeAsync(3000);
    expect(renewals).toBe(3);
    renewal.stop();
    await vi.advanceTimersByTimeAsync(3000);
    expect(renewals).toBe(3);
  });
});
