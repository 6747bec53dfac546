import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMongo, insertManyNew, isDuplicateKeyError, type Mongo, upsertMany } from '../../src/infra/mongo.js';
import { freshDatabaseUri } from '../helpers/app.js';

/** The shared bulk writers of src/infra/mongo.ts, against the real test server. */
let mongo: Mongo;

beforeAll(async () => {
  mongo = createMongo(freshDatabaseUri());
  await mongo.client.connect();
});

afterAll(async () => {
  await mongo.db.dropDatabase();
  await mongo.client.close();
});

interface Row {
  _id: string;
  text: string;
}

describe('insertManyNew', () => {
  it('inserts the new documents, leaves the existing ones and counts only what went in', async () => {
    const rows = mongo.db.collection<Row>('insert_new');
    expect(await insertManyNew(rows, [])).toBe(0);
    expect(await insertManyNew(rows, [{ _id: 'a', text: 'first' }, { _id: 'b', text: 'first' }])).toBe(2);
    expect(await insertManyNew(rows, [{ _id: 'b', text: 'second' }, { _id: 'c', text: 'second' }, { _id: 'a', text: 'second' }, { _id: 'd', text: 'second' }])).toBe(2);
    const stored = await rows.find().sort({ _id: 1 }).toArray();
    expect(stored).toEqual([
      { _id: 'a', text: 'first' },
      { _id: 'b', text: 'first' },
      { _id: 'c', text: 'second' },
      { _id: 'd', text: 'second' },
    ]);
    expect(await insertManyNew(rows, [{ _id: 'a', text: 'third' }])).toBe(0);
  });

  it('a bulk failure counts as a duplicate only when every failed write is one', () => {
    expect(isDuplicateKeyError({ code: 11000 })).toBe(true);
    expect(isDuplicateKeyError({ writeErrors: [{ code: 11000 }, { code: 11000 }] })).toBe(true);
    expect(isDuplicateKeyError({ writeErrors: [{ code: 11000 }, { code: 121 }] })).toBe(false);
    expect(isDuplicateKeyError({ code: 121 })).toBe(false);
    expect(isDuplicateKeyError(null)).toBe(false);
  });
});

describe('upsertMany', () => {
  it('creates the unknown documents and replaces the known ones whole', async () => {
    const rows = mongo.db.collection<Row & { extra?: string }>('upsert_many');
    expect(await upsertMany(rows, [])).toEqual({ created: 0, updated: 0 });
    expect(await upsertMany(rows, [{ _id: 'x', text: 'one', extra: 'kept?' }, { _id: 'y', text: 'one' }])).toEqual({ created: 2, updated: 0 });
    expect(await upsertMany(rows, [{ _id: 'y', text: 'two' }, { _id: 'x', text: 'two' }, { _id: 'z', text: 'two' }])).toEqual({ created: 1, updated: 2 });
    expect(await rows.find().sort({ _id: 1 }).toArray()).toEqual([
      { _id: 'x', text: 'two' },
      { _id: 'y', text: 'two' },
      { _id: 'z', text: 'two' },
    ]);
  });
});
