import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMongo, ensureIndexes, type Mongo } from '../../src/infra/mongo.js';
import { createTeamPermissionRows, RESOURCE_PERMISSION_INDEXES } from '../../src/platform/permissions/resource-permissions.repo.js';
import { freshDatabaseUri } from '../helpers/app.js';

/**
 * A member's team-wide permission is one `resource_permissions` row without `resourceId`. Two
 * first sets at once used to upsert two rows on FerretDB (the unique key does not collide on the
 * missing field there; measured up to 8 of 8) and answer 11000 to one caller on MongoDB (where it
 * does, as null).
 */
let mongo: Mongo;

beforeAll(async () => {
  mongo = createMongo(freshDatabaseUri());
  await ensureIndexes(mongo.db, RESOURCE_PERMISSION_INDEXES);
});
afterAll(async () => {
  await mongo.db.dropDatabase().catch(() => undefined);
  await mongo.client.close();
});

const rowsOf = (tmbId: ObjectId) => mongo.db.collection('resource_permissions').find({ resourceType: 'team', tmbId }).toArray();

describe("a member's team permission set by several callers at once", () => {
  it('stores one row, and every call succeeds', async () => {
    const teamRows = createTeamPermissionRows(mongo.db);
    // Several members: one interleaving may happen to serialise the writes.
    for (let member = 0; member < 10; member++) {
      const teamId = new ObjectId();
      const tmbId = new ObjectId();
      const values = [1, 2, 3, 4, 5, 6, 7, 8];
      const results = await Promise.allSettled(values.map((value) => teamRows.set(teamId, tmbId, value)));
      expect(results.map((result) => (result.status === 'fulfilled' ? result.value : String(result.reason)))).toEqual(values.map(() => true));
      const rows = await rowsOf(tmbId);
      expect(rows).toHaveLength(1);
      expect(values).toContain(rows[0]?.permission);
      expect(await teamRows.find(teamId, tmbId)).toBe(rows[0]?.permission);
    }
  });

  it('writes into a row the reference stored (its own id) instead of adding one', async () => {
    const teamRows = createTeamPermissionRows(mongo.db);
    const teamId = new ObjectId();
    const tmbId = new ObjectId();
    const legacyId = new ObjectId();
    await mongo.db.collection('resource_permissions').insertOne({ _id: legacyId, resourceType: 'team', teamId, tmbId, permission: 4 });
    await Promise.all([5, 6, 7].map((value) => teamRows.set(teamId, tmbId, value)));
    const rows = await rowsOf(tmbId);
    expect(rows.map((row) => row._id.toHexString())).toEqual([legacyId.toHexString()]);
    expect([5, 6, 7]).toContain(rows[0]?.permission);
  });

  it('a later set changes the one row; a member of another team keeps its own', async () => {
    const teamRows = createTeamPermissionRows(mongo.db);
    const teamId = new ObjectId();
    const [tmbId, other] = [new ObjectId(), new ObjectId()];
    await Promise.all([teamRows.set(teamId, tmbId, 4), teamRows.set(teamId, tmbId, 5), teamRows.set(new ObjectId(), other, 6)]);
    expect(await teamRows.set(teamId, tmbId, 7)).toBe(true);
    expect((await rowsOf(tmbId)).map((row) => row.permission)).toEqual([7]);
    expect((await rowsOf(other)).map((row) => row.permission)).toEqual([6]);
    expect(await teamRows.deleteForMember(tmbId)).toBe(1);
    expect(await teamRows.find(teamId, tmbId)).toBeUndefined();
  });
});
