import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createDeferredWork } from '../../src/infra/deferred-work.js';

describe('deferred work', () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it('runs a task later at its time, once', async () => {
    const work = createDeferredWork(() => undefined);
    const task = vi.fn(async () => undefined);
    work.later(60_000, task);
    await vi.advanceTimersByTimeAsync(59_999);
    expect(task).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    expect(task).toHaveBeenCalledTimes(1);
    await work.flush();
    expect(task).toHaveBeenCalledTimes(1);
  });

  it('flush runs waiting tasks at once, leaves no timer, and nothing runs after it', async () => {
    const work = createDeferredWork(() => undefined);
    const task = vi.fn(async () => undefined);
    work.later(60_000, task);
    expect(vi.getTimerCount()).toBe(1);
    await work.flush();
    expect(task).toHaveBeenCalledTimes(1);
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(120_000);
    expect(task).toHaveBeenCalledTimes(1);
  });

  it('flush waits for running tasks and for the retries they schedule meanwhile', async () => {
    const work = createDeferredWork(() => undefined);
    const order: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    work.now(async () => {
      await gate;
      order.push('first attempt');
      work.later(60_000, async () => void order.push('retry'));
    });
    const flushed = work.flush().then(() => order.push('flushed'));
    await Promise.resolve();
    expect(order).toEqual([]);
    release();
    await flushed;
    expect(order).toEqual(['first attempt', 'retry', 'flushed']);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('hands failures to onError and keeps flushing', async () => {
    const errors: unknown[] = [];
    const work = createDeferredWork((error) => errors.push(error));
    const after = vi.fn(async () => undefined);
    work.later(1_000, async () => {
      throw new Error('client closed');
    });
    work.later(2_000, after);
    await work.flush();
    expect(errors).toEqual([new Error('client closed')]);
    expect(after).toHaveBeenCalledTimes(1);
  });
});
