/** Write-behind batches (infra/write-behind.ts) against the real database. */
import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWriteBehind } from '../../src/infra/write-behind.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { commandsDuring } from '../helpers/command-counter.js';

let t: TestApp;

beforeAll(async () => {
  t = await buildTestApp();
});

afterAll(async () => {
  await t?.close();
});

type Doc = { _id: ObjectId; n: number };

function writerFor(name: string) {
  const collection = t.app.mongo.db.collection<Doc>(name);
  const lost: Doc[] = [];
  const writer = createWriteBehind<Doc>({
    insertMany: (docs) => collection.insertMany(docs, { ordered: false }),
    windowMs: 60_000,
    maxBatch: 500,
    retry: { firstMs: 10, maxMs: 10 },
    attempts: 3,
    maxPending: 1000,
    onLost: (_error, docs) => lost.push(...docs),
  });
  return { collection, writer, lost };
}

describe('write-behind against the database', () => {
  it('twenty records cost one insert command', async () => {
    const { collection, writer, lost } = writerFor('behind_a');
    const commands = await commandsDuring(t.app, async () => {
      for (let n = 0; n < 20; n++) writer.add({ _id: new ObjectId(), n });
      await writer.drain();
    });
    expect(commands.filter((c) => c.name === 'insert' && c.collection === 'behind_a')).toHaveLength(1);
    expect((await collection.find({}).toArray()).map((doc) => doc.n).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, n) => n));
    expect(lost).toEqual([]);
  });

  it('a record the database refuses is reported alone; the rest of its batch is stored', async () => {
    const { collection, writer, lost } = writerFor('behind_b');
    const taken = new ObjectId();
    await collection.insertOne({ _id: taken, n: -1 });
    writer.add({ _id: new ObjectId(), n: 0 });
    writer.add({ _id: taken, n: 1 });
    writer.add({ _id: new ObjectId(), n: 2 });
    await writer.drain();
    expect(lost).toEqual([{ _id: taken, n: 1 }]);
    expect((await collection.find({}).toArray()).map((doc) => doc.n).sort()).toEqual([-1, 0, 2]);
  });
});
