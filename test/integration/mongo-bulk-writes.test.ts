import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ObjectId } from 'mongodb';
import { bulkUpdate, createMongo, deleteEach, EQUALITY_READS_UP_TO, existingObjectIds, findEachById, findWithAnyOf, insertManyNew, isDuplicateKeyError, type Mongo, UPDATE_STATEMENTS_PER_COMMAND, upsertMany } from '../../src/infra/mongo.js';
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

describe('deleteEach', () => {
  it('deletes what any filter matches in one delete command and counts it; other scopes stay', async () => {
    const rows = mongo.db.collection<{ _id: number; team: string; group: string }>('delete_each');
    await rows.insertMany([
      { _id: 1, team: 't', group: 'a' },
      { _id: 2, team: 't', group: 'a' },
      { _id: 3, team: 't', group: 'b' },
      { _id: 4, team: 't', group: 'c' },
      { _id: 5, team: 'other', group: 'a' },
    ]);
    expect(await deleteEach(rows, [])).toBe(0);
    const commands: string[] = [];
    const listener = (event: { commandName: string }) => void commands.push(event.commandName);
    mongo.client.on('commandStarted', listener);
    try {
      expect(await deleteEach(rows, ['a', 'b', 'missing'].map((group) => ({ team: 't', group })))).toBe(3);
    } finally {
      mongo.client.off('commandStarted', listener);
    }
    expect(commands.filter((name) => name === 'delete')).toHaveLength(1);
    expect((await rows.find().sort({ _id: 1 }).toArray()).map((row) => row._id)).toEqual([4, 5]);
  });
});

describe('existingObjectIds', () => {
  it('answers which ids name a document, each once', async () => {
    const rows = mongo.db.collection<{ _id: ObjectId }>('existing_ids');
    const [kept, other] = [new ObjectId(), new ObjectId()];
    await rows.insertMany([{ _id: kept }, { _id: other }]);
    const missing = new ObjectId().toHexString();
    expect(await existingObjectIds(rows, [])).toEqual(new Set());
    expect(await existingObjectIds(rows, [kept.toHexString(), missing, kept.toHexString()])).toEqual(new Set([kept.toHexString()]));
  });

  it('findEachById reads the known ids once each, with the projection', async () => {
    const rows = mongo.db.collection<{ _id: ObjectId; name: string; secret: string }>('find_each');
    const [a, b] = [new ObjectId(), new ObjectId()];
    await rows.insertMany([{ _id: a, name: 'a', secret: 's' }, { _id: b, name: 'b', secret: 's' }]);
    const found = await findEachById(rows, [b, new ObjectId(), a, b], { name: 1 });
    expect(found.sort((x, y) => x.name.localeCompare(y.name))).toEqual([{ _id: a, name: 'a' }, { _id: b, name: 'b' }]);
  });
});

describe('findWithAnyOf', () => {
  it('reads value by value up to EQUALITY_READS_UP_TO values, then with one $in; same documents, scope kept', async () => {
    const rows = mongo.db.collection<{ _id: number; team: string; group: number }>('find_with_any_of');
    await rows.insertMany(Array.from({ length: 60 }, (_, i) => ({ _id: i, team: i < 50 ? 't' : 'other', group: i % 25 })));
    const filters: Record<string, unknown>[] = [];
    const listener = (event: { commandName: string; command: Record<string, unknown> }) => {
      if (event.commandName === 'find') filters.push(event.command.filter as Record<string, unknown>);
    };
    const read = async (groups: number[]) => {
      filters.length = 0;
      mongo.client.on('commandStarted', listener);
      try {
        return (await findWithAnyOf(rows, { team: 't' }, 'group', groups, { team: 1 })).map((row) => row._id).sort((a, b) => a - b);
      } finally {
        mongo.client.off('commandStarted', listener);
      }
    };
    expect(await read([])).toEqual([]);
    expect(filters).toHaveLength(0);
    const few = Array.from({ length: EQUALITY_READS_UP_TO }, (_, i) => i);
    const expectedFew = (await rows.find({ team: 't', group: { $in: few } }).toArray()).map((row) => row._id).sort((a, b) => a - b);
    expect(await read(few)).toEqual(expectedFew);
    expect(filters).toHaveLength(EQUALITY_READS_UP_TO);
    for (const filter of filters) expect(typeof filter.group).toBe('number');
    const many = Array.from({ length: EQUALITY_READS_UP_TO + 1 }, (_, i) => i);
    const expectedMany = (await rows.find({ team: 't', group: { $in: many } }).toArray()).map((row) => row._id).sort((a, b) => a - b);
    expect(await read(many)).toEqual(expectedMany);
    expect(filters).toEqual([{ team: 't', group: { $in: many } }]);
    expect(expectedMany.every((id) => id < 50)).toBe(true);
  });
});

describe('bulkUpdate', () => {
  it('applies large bulks of updates and upserts, concurrent ones too (FerretDB 1.24 stalls on 50 statements in one command)', async () => {
    const rows = mongo.db.collection<{ _id: number; batch: number; value: number }>('bulk_update');
    await rows.insertMany(Array.from({ length: 200 }, (_, i) => ({ _id: i, batch: i % 4, value: 0 })));
    const commands: string[] = [];
    const listener = (event: { commandName: string }) => void commands.push(event.commandName);
    mongo.client.on('commandStarted', listener);
    let results: { matchedCount: number; modifiedCount: number; upsertedCount: number }[];
    try {
      results = await Promise.all(
        [0, 1, 2, 3].map((batch) =>
          bulkUpdate(
            rows,
            // 50 updates of this batch's rows and 10 upserts of new ones, each call.
            Array.from({ length: 60 }, (_, i) => {
              const _id = i < 50 ? i * 4 + batch : 1000 + batch * 10 + i;
              return { updateOne: { filter: { _id }, update: { $set: { batch, value: 1 } }, upsert: true } };
            }),
            { ordered: batch % 2 === 0 },
          ),
        ),
      );
    } finally {
      mongo.client.off('commandStarted', listener);
    }
    expect(results).toEqual(Array.from({ length: 4 }, () => ({ matchedCount: 50, modifiedCount: 50, upsertedCount: 10 })));
    expect(commands.filter((name) => name === 'update')).toHaveLength(4 * Math.ceil(60 / UPDATE_STATEMENTS_PER_COMMAND));
    expect(await rows.countDocuments({ value: 1 })).toBe(240);
    expect(await bulkUpdate(rows, [])).toEqual({ matchedCount: 0, modifiedCount: 0, upsertedCount: 0 });
  });

  it('ordered stops at the first failing command; unordered runs every command, then throws', async () => {
    const rows = mongo.db.collection<{ _id: number; key: string; n: number }>('bulk_update_failures');
    await rows.createIndex({ key: 1 }, { unique: true });
    await rows.insertMany([{ _id: 1, key: 'taken', n: 0 }, ...Array.from({ length: 40 }, (_, i) => ({ _id: 100 + i, key: `k${i}`, n: 0 }))]);
    // The first command's last statement collides with the unique key; the rest are fine.
    const operations = (n: number) =>
      Array.from({ length: 40 }, (_, i) => ({ updateOne: { filter: { _id: 100 + i }, update: { $set: i === UPDATE_STATEMENTS_PER_COMMAND - 1 ? { key: 'taken' } : { n } } } }));
    await expect(bulkUpdate(rows, operations(1), { ordered: true })).rejects.toThrow();
    expect(await rows.countDocuments({ n: 1 })).toBe(UPDATE_STATEMENTS_PER_COMMAND - 1);
    await expect(bulkUpdate(rows, operations(2), { ordered: false })).rejects.toThrow();
    expect(await rows.countDocuments({ n: 2 })).toBe(39);
  });
});
