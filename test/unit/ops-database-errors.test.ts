import { MongoNetworkError, MongoServerError, MongoServerSelectionError } from 'mongodb';
import { Writable } from 'node:stream';
import { describe, expect, it, vi } from 'vitest';
import { backoffDelay, startPeriodicTask } from '../../src/infra/backoff.js';
import { describeError, isDatabaseUnavailable } from '../../src/infra/database-errors.js';
import { renderError, toAppError } from '../../src/infra/error-render.js';
import { createLogger } from '../../src/infra/logger.js';

/** The driver builds it with the topology it saw; a bare one is enough here. */
const selectionError = (reason: Record<string, unknown> = { error: null }) =>
  new MongoServerSelectionError('Server selection timed out after 1000 ms', reason as unknown as ConstructorParameters<typeof MongoServerSelectionError>[1]);
const serverError = (code: number) => new MongoServerError({ message: `server said ${code}`, code, ok: 0 });

describe('isDatabaseUnavailable', () => {
  it('recognises outages: network, server selection, pool, shutdown and step-down codes, wrapped causes', () => {
    expect(isDatabaseUnavailable(new MongoNetworkError('connect ECONNREFUSED 127.0.0.1:27017'))).toBe(true);
    expect(isDatabaseUnavailable(selectionError())).toBe(true);
    expect(isDatabaseUnavailable(serverError(91))).toBe(true); // ShutdownInProgress
    expect(isDatabaseUnavailable(serverError(10107))).toBe(true); // NotWritablePrimary
    const pool = Object.assign(new Error('Connection pool was cleared'), { name: 'MongoPoolClearedError' });
    expect(isDatabaseUnavailable(pool)).toBe(true);
    expect(isDatabaseUnavailable(new Error('start-up task failed', { cause: new MongoNetworkError('reset') }))).toBe(true);
  });

  it('leaves query errors and everything else alone', () => {
    expect(isDatabaseUnavailable(serverError(11000))).toBe(false); // duplicate key
    expect(isDatabaseUnavailable(serverError(2))).toBe(false); // BadValue
    expect(isDatabaseUnavailable(new Error('boom'))).toBe(false);
    expect(isDatabaseUnavailable(undefined)).toBe(false);
  });
});

describe('an outage as a response', () => {
  const { appError, unexpected } = toAppError(selectionError(), 'req-1');

  it('is a 503 with Retry-After, not an unexpected 500', () => {
    expect(unexpected).toBe(false);
    expect(appError.httpStatus).toBe(503);
    expect(Number(appError.headers?.['retry-after'])).toBeGreaterThan(0);
  });

  it('renders in each API format', () => {
    expect(renderError(appError, 'platform').body).toMatchObject({ code: 503, statusText: 'serviceUnavailable', data: null });
    expect(renderError(appError, 'oauth').body).toMatchObject({ error: 'temporarily_unavailable' });
    expect(renderError(appError, 'k8s').body).toMatchObject({ kind: 'Status', reason: 'ServiceUnavailable', code: 503 });
  });
});

describe('logging driver errors', () => {
  it('describes an error in one line', () => {
    expect(describeError(serverError(91))).toBe('MongoServerError (code 91): server said 91');
    expect(describeError('plain')).toBe('plain');
  });

  it('serialises a driver error with a circular topology as plain fields', () => {
    const topology: Record<string, unknown> = { error: null, servers: new Map() };
    topology.self = topology;
    const error = selectionError(topology);
    let line = '';
    const sink = new Writable({
      write(chunk, _encoding, callback) {
        line += chunk.toString();
        callback();
      },
    });
    createLogger('info', sink).error({ err: error }, 'failed');
    expect(line).not.toMatch(/unable to serialize|circular/i);
    expect(JSON.parse(line).err).toMatchObject({ type: 'MongoServerSelectionError', message: 'Server selection timed out after 1000 ms' });
  });
});

describe('backoffDelay', () => {
  it('doubles from the first wait up to the cap', () => {
    const options = { firstMs: 2000, maxMs: 60_000 };
    expect([1, 2, 3, 4, 5, 6, 7, 20].map((failures) => backoffDelay(failures, options))).toEqual([2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000, 60_000]);
  });

  it('grows by another factor when given one', () => {
    const options = { firstMs: 10, maxMs: 200, factor: 1.5 };
    expect([1, 2, 3, 8, 9].map((failures) => backoffDelay(failures, options))).toEqual([10, 15, 22.5, 170.859375, 200]);
  });
});

describe('startPeriodicTask', () => {
  it('backs off after failures (one readable line each), then returns to its interval', async () => {
    vi.useFakeTimers();
    try {
      const lines: string[] = [];
      let failuresLeft = 3;
      let runs = 0;
      const task = startPeriodicTask({
        name: 'test cleanup',
        intervalMs: 60_000,
        retry: { firstMs: 1000, maxMs: 30_000 },
        log: { info: (line) => lines.push(`info ${line}`), warn: (line) => lines.push(`warn ${line}`) },
        task: async () => {
          runs += 1;
          if (failuresLeft-- > 0) throw new MongoNetworkError('connect ECONNREFUSED 127.0.0.1:27017');
        },
      });
      await vi.advanceTimersByTimeAsync(60_000); // first run: fails
      await vi.advanceTimersByTimeAsync(1000); // retry after 1 s: fails
      await vi.advanceTimersByTimeAsync(2000); // retry after 2 s: fails
      await vi.advanceTimersByTimeAsync(4000); // retry after 4 s: succeeds
      expect(runs).toBe(4);
      expect(lines).toEqual([
        'warn test cleanup failed (1 in a row, next try in 1 s): MongoNetworkError: connect ECONNREFUSED 127.0.0.1:27017',
        'warn test cleanup failed (2 in a row, next try in 2 s): MongoNetworkError: connect ECONNREFUSED 127.0.0.1:27017',
        'warn test cleanup failed (3 in a row, next try in 4 s): MongoNetworkError: connect ECONNREFUSED 127.0.0.1:27017',
        'info test cleanup: succeeded again after 3 failed attempt(s)',
      ]);
      await vi.advanceTimersByTimeAsync(59_000);
      expect(runs).toBe(4);
      await vi.advanceTimersByTimeAsync(1000);
      expect(runs).toBe(5);
      task.stop();
      await vi.advanceTimersByTimeAsync(120_000);
      expect(runs).toBe(5);
    } finally {
      vi.useRealTimers();
    }
  });
});
