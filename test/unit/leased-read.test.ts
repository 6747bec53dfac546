import { describe, expect, it } from 'vitest';
import { createLeasedRead } from '../../src/infra/leased-read.js';

const LEASE_MS = 100;

/**
 * A reader over a fake database whose reads the test settles by hand, on a clock the test moves:
 * each read records its key and start, and grants a lease from its start once it has a value, as
 * the version stamps and the credential epoch do.
 */
function fakeReader() {
  const clock = { at: 0 };
  const leases = new Map<string, { value: string; until: number }>();
  const reads: { key: string; started: number; settle: (value: string) => void; fail: (error: Error) => void }[] = [];
  const read = createLeasedRead<string>({
    leaseMs: LEASE_MS,
    monotonic: () => clock.at,
    leases: {
      valueAt: (key, at) => {
        const lease = leases.get(key);
        return lease && lease.until > at ? lease.value : undefined;
      },
    },
    read: (key, started) =>
      new Promise<string>((resolve, reject) => {
        reads.push({ key, started, fail: reject, settle: resolve });
      }).then((value) => {
        leases.set(key, { value, until: started + LEASE_MS });
        return value;
      }),
  });
  const last = () => {
    const sent = reads.at(-1);
    if (!sent) throw new Error('no read was sent');
    return sent;
  };
  return { clock, read, reads, last };
}

describe('a leased read', () => {
  it('reads once, then answers from the lease until it ends; past it, reads again', async () => {
    const reader = fakeReader();
    const first = reader.read('k');
    reader.last().settle('v1');
    expect(await first).toBe('v1');
    reader.clock.at = LEASE_MS - 1;
    expect(await reader.read('k')).toBe('v1');
    expect(reader.reads).toHaveLength(1);
    reader.clock.at = LEASE_MS;
    const second = reader.read('k');
    expect(reader.reads).toHaveLength(2);
    reader.last().settle('v2');
    expect(await second).toBe('v2');
  });

  it('concurrent callers share the read in flight', async () => {
    const reader = fakeReader();
    const callers = [reader.read('k')];
    reader.clock.at = LEASE_MS - 1;
    callers.push(reader.read('k'), reader.read('k'));
    expect(reader.reads).toHaveLength(1);
    reader.last().settle('shared');
    expect(await Promise.all(callers)).toEqual(['shared', 'shared', 'shared']);
  });

  it('a caller arriving once the lease of the read in flight is over sends its own, and later callers share that one', async () => {
    const reader = fakeReader();
    const early = reader.read('k');
    reader.clock.at = LEASE_MS;
    const late = reader.read('k');
    expect(reader.reads.map((sent) => sent.started)).toEqual([0, LEASE_MS]);
    // The early read settling does not end the sharing of the late one.
    reader.reads[0]?.settle('before a write');
    expect(await early).toBe('before a write');
    reader.clock.at = LEASE_MS + 1;
    const joined = reader.read('k');
    expect(reader.reads).toHaveLength(2);
    reader.last().settle('after a write');
    expect(await Promise.all([late, joined])).toEqual(['after a write', 'after a write']);
  });

  it('a failed read reaches every caller sharing it, grants no lease, and the next caller reads again', async () => {
    const reader = fakeReader();
    const callers = [reader.read('k'), reader.read('k')];
    reader.last().fail(new Error('database gone'));
    const settled = await Promise.allSettled(callers);
    expect(settled.map((result) => (result.status === 'rejected' ? (result.reason as Error).message : result.status))).toEqual(['database gone', 'database gone']);
    const retry = reader.read('k');
    expect(reader.reads).toHaveLength(2);
    reader.last().settle('back');
    expect(await retry).toBe('back');
  });

  it('keys are read and leased apart', async () => {
    const reader = fakeReader();
    const a = reader.read('a');
    const b = reader.read('b');
    expect(reader.reads.map((sent) => sent.key)).toEqual(['a', 'b']);
    reader.reads[0]?.settle('value of a');
    reader.reads[1]?.settle('value of b');
    expect([await a, await b]).toEqual(['value of a', 'value of b']);
    expect([await reader.read('a'), await reader.read('b')]).toEqual(['value of a', 'value of b']);
    expect(reader.reads).toHaveLength(2);
  });

  it('a read whose lease is over by the time it settles is not shared after it settles', async () => {
    const reader = fakeReader();
    const slow = reader.read('k');
    reader.clock.at = LEASE_MS * 3;
    reader.last().settle('old');
    expect(await slow).toBe('old');
    const next = reader.read('k');
    expect(reader.reads).toHaveLength(2);
    reader.last().settle('new');
    expect(await next).toBe('new');
  });
});
