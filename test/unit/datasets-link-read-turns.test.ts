import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLinkReadTurns } from '../../src/platform/datasets/files/link-read-turns.js';

/** A read that ends when told to, recording that it started. */
function heldRead(started: string[], name: string) {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const read = async (width: number) => {
    started.push(`${name}:${width}`);
    await done;
    return name;
  };
  return { read, finish };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

afterEach(() => {
  vi.useRealTimers();
});

describe('a team reads its links in turn', () => {
  it('admits requests first come first served within the team width; other teams are apart', async () => {
    const turns = createLinkReadTurns({ perTeam: 4, waitingPerTeam: 4, maxWaitMs: 60_000 });
    const started: string[] = [];
    const wide = heldRead(started, 'wide');
    const narrow = heldRead(started, 'narrow');
    const second = heldRead(started, 'second');
    const other = heldRead(started, 'other');
    const runs = [turns.inTurn('a', 20, wide.read), turns.inTurn('a', 1, narrow.read), turns.inTurn('a', 3, second.read), turns.inTurn('b', 20, other.read)];
    await settle();
    expect(started).toEqual(['wide:4', 'other:4']);
    expect(turns.load('a')).toEqual({ reading: 4, waiting: 2 });
    wide.finish();
    await settle();
    // Both fit in the freed width, in the order they came.
    expect(started).toEqual(['wide:4', 'other:4', 'narrow:1', 'second:3']);
    narrow.finish();
    second.finish();
    other.finish();
    expect(await Promise.all(runs)).toEqual(['wide', 'narrow', 'second', 'other']);
    expect(turns.load('a')).toEqual({ reading: 0, waiting: 0 });
  });

  it('refuses a request past the waiting places at once, without running it', async () => {
    const turns = createLinkReadTurns({ perTeam: 4, waitingPerTeam: 2, maxWaitMs: 60_000 });
    const started: string[] = [];
    const reads = ['r0', 'r1', 'r2'].map((name) => heldRead(started, name));
    const runs = reads.map((held) => turns.inTurn('a', 20, held.read));
    const refused = turns.inTurn('a', 1, async () => started.push('refused'));
    await expect(refused).rejects.toMatchObject({ httpStatus: 429 });
    for (const held of reads) held.finish();
    expect(await Promise.all(runs)).toEqual(['r0', 'r1', 'r2']);
    expect(started).toEqual(['r0:4', 'r1:4', 'r2:4']);
  });

  it('refuses a request whose turn does not come within the bound, and lets the next ones go on', async () => {
    vi.useFakeTimers();
    const turns = createLinkReadTurns({ perTeam: 4, waitingPerTeam: 4, maxWaitMs: 1000 });
    const started: string[] = [];
    const first = heldRead(started, 'first');
    const running = turns.inTurn('a', 3, first.read);
    const late = turns.inTurn('a', 4, async () => started.push('late'));
    const outcome = late.then(
      () => 'ran',
      (error: { httpStatus?: number }) => error.httpStatus,
    );
    // Behind the wide one that times out, a narrow request fits beside the first.
    const narrow = turns.inTurn('a', 1, async () => started.push('narrow'));
    await vi.advanceTimersByTimeAsync(1000);
    expect(await outcome).toBe(429);
    await narrow;
    expect(started).toEqual(['first:3', 'narrow']);
    first.finish();
    expect(await running).toBe('first');
    expect(turns.load('a')).toEqual({ reading: 0, waiting: 0 });
  });

  it('a waiting request whose client went away leaves the queue without reading, and the next one takes the room', async () => {
    const turns = createLinkReadTurns({ perTeam: 4, waitingPerTeam: 4, maxWaitMs: 60_000 });
    const started: string[] = [];
    const first = heldRead(started, 'first');
    const running = turns.inTurn('a', 3, first.read);
    const gone = new AbortController();
    const abandoned = turns.inTurn('a', 4, async () => started.push('abandoned'), gone.signal);
    const outcome = abandoned.then(
      () => 'ran',
      (error: Error) => error.name,
    );
    const next = turns.inTurn('a', 1, async () => started.push('next'));
    await settle();
    expect(turns.load('a')).toEqual({ reading: 3, waiting: 2 });
    gone.abort();
    expect(await outcome).toBe('AbortError');
    await next;
    expect(started).toEqual(['first:3', 'next']);
    // Already gone before it asked: refused at once.
    await expect(turns.inTurn('a', 1, async () => started.push('late'), gone.signal)).rejects.toMatchObject({ name: 'AbortError' });
    first.finish();
    expect(await running).toBe('first');
    expect(turns.load('a')).toEqual({ reading: 0, waiting: 0 });
  });
});
