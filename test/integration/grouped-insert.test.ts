/**
 * Group commit of append-only records (infra/grouped-insert.ts) against the real database:
 * concurrent inserts share commands, each caller learns the fate of its own document.
 */
import { MongoClient, ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGroupedInserter } from '../../src/infra/grouped-insert.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { commandsDuring } from '../helpers/command-counter.js';

let t: TestApp;

beforeAll(async () => {
  t = await buildTestApp();
});

afterAll(async () => {
  await t?.close();
});

describe('grouped inserts', () => {
  it('a lone insert is sent at once; inserts made while it is in flight go together in the next command', async () => {
    const collection = t.app.mongo.db.collection<{ _id: ObjectId; n: number }>('grouped_a');
    const inserter = createGroupedInserter(collection);
    const commands = await commandsDuring(t.app, () => Promise.all(Array.from({ length: 20 }, (_, n) => inserter.insert({ _id: new ObjectId(), n }))));
    const inserts = commands.filter((c) => c.name === 'insert' && c.collection === 'grouped_a');
    expect(inserts).toHaveLength(2);
    const stored = await collection.find({}).toArray();
    expect(stored.map((doc) => doc.n).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, n) => n));
  });

  it('a document the database refuses rejects its own caller only; the rest of its batch is stored', async () => {
    const collection = t.app.mongo.db.collection<{ _id: ObjectId; n: number }>('grouped_b');
    const taken = new ObjectId();
    await collection.insertOne({ _id: taken, n: -1 });
    const inserter = createGroupedInserter(collection);
    const results = await Promise.allSettled([
      inserter.insert({ _id: new ObjectId(), n: 0 }),
      inserter.insert({ _id: new ObjectId(), n: 1 }),
      inserter.insert({ _id: taken, n: 2 }),
      inserter.insert({ _id: new ObjectId(), n: 3 }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect((results[2] as PromiseRejectedResult).reason).toMatchObject({ code: 11000 });
    const stored = await collection.find({}).toArray();
    expect(stored.map((doc) => doc.n).sort((a, b) => a - b)).toEqual([-1, 0, 1, 3]);
  });

  it('callers with several documents: each learns whether all of its own were stored', async () => {
    const collection = t.app.mongo.db.collection<{ _id: ObjectId; caller: string }>('grouped_d');
    const taken = new ObjectId();
    await collection.insertOne({ _id: taken, caller: 'earlier' });
    const inserter = createGroupedInserter(collection);
    const pair = (caller: string, first = new ObjectId()) => [
      { _id: first, caller },
      { _id: new ObjectId(), caller },
    ];
    const commands = await commandsDuring(t.app, async () => {
      const results = await Promise.allSettled([inserter.insertAll(pair('a')), inserter.insertAll(pair('b')), inserter.insertAll(pair('c', taken)), inserter.insertAll(pair('d')), inserter.insertAll([])]);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    });
    expect(commands.filter((c) => c.name === 'insert' && c.collection === 'grouped_d')).toHaveLength(2);
    const stored = await collection.find({}).toArray();
    expect(stored.map((doc) => doc.caller).sort()).toEqual(['a', 'a', 'b', 'b', 'c', 'd', 'd', 'earlier']);
  });

  it('a document too large to send fails its own caller only; the others of its batch are stored', async () => {
    const collection = t.app.mongo.db.collection<{ _id: ObjectId; n: number; text?: string }>('grouped_e');
    const inserter = createGroupedInserter(collection);
    const results = await Promise.allSettled([
      inserter.insert({ _id: new ObjectId(), n: 0 }),
      inserter.insert({ _id: new ObjectId(), n: 1 }),
      inserter.insert({ _id: new ObjectId(), n: 2, text: 'x'.repeat(17 * 1024 * 1024) }),
      inserter.insert({ _id: new ObjectId(), n: 3 }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    const stored = await collection.find({}, { projection: { n: 1 } }).toArray();
    expect(stored.map((doc) => doc.n).sort((a, b) => a - b)).toEqual([0, 1, 3]);
  });

  it('when the database cannot be reached, every caller is told', async () => {
    const client = new MongoClient(t.config.MONGODB_URI, { serverSelectionTimeoutMS: 200 });
    await client.connect();
    const inserter = createGroupedInserter(client.db().collection<{ _id: ObjectId }>('grouped_c'));
    await client.close();
    const results = await Promise.allSettled([inserter.insert({ _id: new ObjectId() }), inserter.insert({ _id: new ObjectId() }), inserter.insert({ _id: new ObjectId() })]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(await t.app.mongo.db.collection('grouped_c').countDocuments({})).toBe(0);
  });
});
