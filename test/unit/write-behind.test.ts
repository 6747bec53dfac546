/** Write-behind records (infra/write-behind.ts): buffered at once, batched, retried through an outage, never stored twice. */
import { MongoNetworkError, MongoServerError } from 'mongodb';
import { describe, expect, it } from 'vitest';
import { createWriteBehind } from '../../src/infra/write-behind.js';

type Doc = { id: number };
const down = () => new MongoNetworkError('connection refused');
const duplicate = () => new MongoServerError({ message: 'E11000 duplicate key error', code: 11000 });

function harness(insertMany: (docs: Doc[]) => Promise<void>, { retryMs = 1, windowMs = 60_000, maxBatch = 100 } = {}) {
  const lost: { error: unknown; docs: Doc[] }[] = [];
  const writer = createWriteBehind<Doc>({
    insertMany,
    windowMs,
    maxBatch,
    retry: { firstMs: retryMs, maxMs: retryMs },
    attempts: 4,
    maxPending: 1000,
    onLost: (error, docs) => lost.push({ error, docs }),
  });
  return { writer, lost };
}

describe('write-behind', () => {
  it('add returns at once; documents added within the window share one insert, written by drain', async () => {
    const batches: number[][] = [];
    const { writer, lost } = harness(async (docs) => {
      batches.push(docs.map((doc) => doc.id));
    });
    writer.add({ id: 1 });
    writer.add({ id: 2 });
    writer.add({ id: 3 });
    expect(writer.pending).toBe(3);
    expect(batches).toEqual([]);
    await writer.drain();
    expect(batches).toEqual([[1, 2, 3]]);
    expect(writer.pending).toBe(0);
    expect(lost).toEqual([]);
  });

  it('the window ends by itself, and a full batch is written without waiting for it', async () => {
    const batches: number[][] = [];
    const { writer } = harness(
      async (docs) => {
        batches.push(docs.map((doc) => doc.id));
      },
      { windowMs: 5, maxBatch: 2 },
    );
    writer.add({ id: 1 });
    writer.add({ id: 2 });
    expect(batches).toEqual([[1, 2]]);
    writer.add({ id: 3 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(batches).toEqual([[1, 2], [3]]);
    expect(writer.pending).toBe(0);
  });

  it('retries a batch while the database is unavailable, then writes it', async () => {
    let calls = 0;
    const stored: number[] = [];
    const { writer, lost } = harness(async (docs) => {
      calls += 1;
      if (calls < 3) throw down();
      stored.push(...docs.map((doc) => doc.id));
    });
    writer.add({ id: 7 });
    writer.add({ id: 8 });
    await writer.drain();
    expect(calls).toBe(3);
    expect(stored).toEqual([7, 8]);
    expect(lost).toEqual([]);
  });

  it('a retry that finds its own first attempt stored (duplicate _id) counts as written, not lost', async () => {
    let calls = 0;
    const { writer, lost } = harness(async () => {
      calls += 1;
      // The first attempt reached the database but its answer was lost on the way back.
      throw calls === 1 ? down() : duplicate();
    });
    writer.add({ id: 1 });
    await writer.drain();
    expect(calls).toBe(2);
    expect(lost).toEqual([]);
  });

  it('an error that is not an outage is reported at once, without retrying', async () => {
    let calls = 0;
    const { writer, lost } = harness(async () => {
      calls += 1;
      throw new Error('a bug');
    });
    writer.add({ id: 3 });
    await writer.drain();
    expect(calls).toBe(1);
    expect(lost.map((entry) => entry.docs)).toEqual([[{ id: 3 }]]);
  });

  it('gives a batch up after its attempts and reports it with the last error', async () => {
    let calls = 0;
    const { writer, lost } = harness(async () => {
      calls += 1;
      throw down();
    });
    writer.add({ id: 4 });
    await writer.drain();
    expect(calls).toBe(4);
    expect(lost).toHaveLength(1);
    expect(lost[0]?.error).toBeInstanceOf(MongoNetworkError);
    expect(lost[0]?.docs).toEqual([{ id: 4 }]);
  });

  it('close writes the buffer and wakes batches waiting to retry for one last attempt', async () => {
    let calls = 0;
    const stored: number[] = [];
    const { writer, lost } = harness(
      async (docs) => {
        calls += 1;
        if (calls === 1) throw down();
        stored.push(...docs.map((doc) => doc.id));
      },
      { retryMs: 60_000 },
    );
    writer.add({ id: 5 });
    void writer.drain();
    await new Promise((resolve) => setTimeout(resolve, 5));
    writer.add({ id: 6 });
    expect(writer.pending).toBe(2);
    // Without the wake-up this would wait the minute out (and the test time out).
    await writer.close();
    expect(stored.sort()).toEqual([5, 6]);
    expect(lost).toEqual([]);
  });

  it('beyond maxPending waiting documents, a new one is reported lost at once instead of held', async () => {
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const stored: number[] = [];
    const lost: Doc[] = [];
    const writer = createWriteBehind<Doc>({
      insertMany: async (docs) => {
        await gate;
        stored.push(...docs.map((doc) => doc.id));
      },
      windowMs: 60_000,
      maxBatch: 2,
      retry: { firstMs: 1, maxMs: 1 },
      attempts: 1,
      maxPending: 3,
      onLost: (_error, docs) => lost.push(...docs),
    });
    for (let id = 1; id <= 5; id++) writer.add({ id });
    expect(writer.pending).toBe(3);
    expect(lost).toEqual([{ id: 4 }, { id: 5 }]);
    release();
    await writer.drain();
    expect(stored.sort()).toEqual([1, 2, 3]);
  });

  it('a report that throws does not escape as an unhandled rejection', async () => {
    const writer = createWriteBehind<Doc>({
      insertMany: async () => {
        throw new Error('a bug');
      },
      windowMs: 60_000,
      maxBatch: 100,
      retry: { firstMs: 1, maxMs: 1 },
      attempts: 1,
      maxPending: 1000,
      onLost: () => {
        throw new Error('the logger failed too');
      },
    });
    writer.add({ id: 1 });
    await expect(writer.drain()).resolves.toBeUndefined();
    expect(writer.pending).toBe(0);
  });

  it('after close a failing write is reported instead of retried', async () => {
    let calls = 0;
    const { writer, lost } = harness(
      async () => {
        calls += 1;
        throw down();
      },
      { retryMs: 60_000 },
    );
    await writer.close();
    writer.add({ id: 6 });
    await writer.drain();
    expect(calls).toBe(1);
    expect(lost.map((entry) => entry.docs)).toEqual([[{ id: 6 }]]);
  });
});
