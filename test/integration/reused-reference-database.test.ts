/**
 * A FastGPT 4.8.10 database reused as it is (the collections and fields are the reference's on
 * purpose): its API keys are stored as the keys themselves, without the digest this service
 * looks keys up by, and some of its indexes have our keys with other options (TTL). Start-up
 * adopts the keys (they keep working; the key itself leaves the database) and leaves a plain
 * index to the reference's one of the same key; MongoDB refuses ours next to it (code 85),
 * which FerretDB does not, so that part is shown against a collection answering as MongoDB does.
 */
import { ObjectId, type Db } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureIndexes } from '../../src/infra/mongo.js';
import { buildReplica, buildTestApp, type TestApp } from '../helpers/app.js';
import { apiKeyHeaders, createUser, whoami, whoamiProbe } from '../helpers/platform.js';

let t: TestApp;

beforeAll(async () => {
  t = await buildTestApp({}, whoamiProbe);
});

afterAll(async () => {
  await t?.close();
});

describe("a reused FastGPT database's API keys", () => {
  it('keep working once a process starts on it, and the keys themselves leave the database', async () => {
    const owner = await createUser(t, { username: 'legacy-owner', password: 'password-lo1' });
    const keys = t.app.mongo.db.collection('openapis');
    const reference = (apiKey: string | undefined, name: string) => ({
      _id: new ObjectId(),
      teamId: new ObjectId(owner.teamId),
      tmbId: new ObjectId(owner.tmbId),
      ...(apiKey === undefined ? {} : { apiKey }),
      createTime: new Date(),
      name,
      usagePoints: 0,
      limit: { maxUsagePoints: -1 },
    });
    const legacyKey = `fastgpt-${'a'.repeat(40)}Legacy1`;
    // Two documents without a usable key: a unique index counting a missing digest as null would refuse the second.
    await keys.insertMany([reference(legacyKey, 'old key'), reference(undefined, 'broken'), reference('', 'empty')]);
    expect((await whoami(t, apiKeyHeaders(legacyKey))).statusCode).toBe(401);

    // A process starting on the database (a restart, a new replica) adopts them.
    const next = await buildReplica(t, {}, whoamiProbe);
    try {
      const resolved = await whoami(next, apiKeyHeaders(legacyKey));
      expect(resolved.statusCode, resolved.body).toBe(200);
      expect(resolved.json().data).toMatchObject({ authType: 'apikey', teamId: owner.teamId, tmbId: owner.tmbId });
      const stored = await keys.find({ teamId: new ObjectId(owner.teamId) }).sort({ _id: 1 }).toArray();
      expect(stored.map((doc) => 'apiKey' in doc)).toEqual([false, false, false]);
      expect(stored[0]).toMatchObject({ apiKeyTail: 'acy1' });
      expect(new Set(stored.map((doc) => doc.apiKeyDigest)).size).toBe(3);
      // Idempotent: a further start adopts nothing and the key still works.
      expect(await next.app.identity.apiKeys.adoptReferenceKeys()).toBe(0);
      expect((await whoami(next, apiKeyHeaders(legacyKey))).statusCode).toBe(200);
    } finally {
      await next.close();
    }
  });
});

describe('an index the reused database has with other options', () => {
  /** A database whose createIndex answers as MongoDB does next to an index of the same key with other options. */
  const conflicting = (code: number) => {
    const created: string[] = [];
    const db = {
      collection: (name: string) => ({
        createIndex: async (key: Record<string, number>) => {
          if (name === 'usages') throw Object.assign(new Error('An equivalent index already exists with a different name and options'), { code, codeName: 'IndexOptionsConflict' });
          created.push(`${name}.${Object.keys(key).join('_')}`);
          return 'ok';
        },
      }),
    } as unknown as Db;
    return { db, created };
  };

  it('leaves a plain range index to it, with a warning, and builds the rest', async () => {
    const { db, created } = conflicting(85);
    const warnings: string[] = [];
    await ensureIndexes(db, [{ collection: 'usages', key: { time: 1 } }, { collection: 'apps', key: { teamId: 1 } }], { warn: (message) => warnings.push(message) });
    expect(created).toEqual(['apps.teamId']);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('usages.time_1');
  });

  it('never leaves a unique index to another, nor passes over any other failure', async () => {
    await expect(ensureIndexes(conflicting(85).db, [{ collection: 'usages', key: { time: 1 }, options: { unique: true } }], { warn: () => undefined })).rejects.toMatchObject({ code: 85 });
    await expect(ensureIndexes(conflicting(11000).db, [{ collection: 'usages', key: { time: 1 } }], { warn: () => undefined })).rejects.toMatchObject({ code: 11000 });
  });
});
