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

  it('renews one at a time, and its stop resolves once the renewal in flight has settled', async () => {
    const started: number[] = [];
    let finishRenewal: () => void = () => undefined;
    const renewal = startLeaseRenewal(1000, () => {
      started.push(Date.now());
      return new Promise<void>((resolve) => (finishRenewal = resolve));
    });
    await vi.advanceTimersByTimeAsync(3500);
    // Ticks at 2 s and 3 s found the first renewal still running: none overlapped it.
    expect(started).toHaveLength(1);
    let stopped = false;
    const stopping = renewal.stop().then(() => (stopped = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(stopped).toBe(false);
    finishRenewal();
    await stopping;
    expect(stopped).toBe(true);
    await vi.advanceTimersByTimeAsync(5000);
    expect(started).toHaveLength(1);
  });

  it('withLeaseRenewal settles after the renewal its work overlapped', async () => {
    const order: string[] = [];
    let finishRenewal: () => void = () => undefined;
    let finishWork: () => void = () => undefined;
    const result = withLeaseRenewal(
      1000,
      () => new Promise<void>((resolve) => (finishRenewal = () => {
        order.push('renewed');
        resolve();
      })),
      () => new Promise<void>((resolve) => (finishWork = resolve)),
    ).then(() => order.push('settled'));
    await vi.advanceTimersByTimeAsync(1000);
    finishWork();
    await vi.advanceTimersByTimeAsync(0);
    expect(order).toEqual([]);
    finishRenewal();
    await result;
    expect(order).toEqual(['renewed', 'settled']);
  });
});
