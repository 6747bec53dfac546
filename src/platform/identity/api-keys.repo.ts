import { createHash } from 'node:crypto';
import { type Db, type Filter, ObjectId } from 'mongodb';
import { usedUp } from '../../domain/credential-limits.js';
import type { IndexDeclaration } from '../../infra/mongo.js';
import { createMongoLocks } from '../../infra/mongo-lock.js';
import { oid, type Plain, plain, plainOrNull } from '../../infra/plain-record.js';
import { createSerialIncrements } from '../../infra/serial-increments.js';
import { always, type CredentialRevocations, credentialSubject, revoking } from './credential-epoch.js';

/**
 * An `openapis` document. Unlike the reference, the key itself is never stored: only its
 * SHA-256 digest (for look-up) and its last four characters (for the masked list).
 */
interface ApiKeyDoc {
  _id: ObjectId;
  teamId: ObjectId;
  tmbId: ObjectId;
  apiKeyDigest: string;
  apiKeyTail: string;
  createTime: Date;
  lastUsedTime?: Date;
  appId?: string;
  name: string;
  usagePoints: number;
  limit: { expiredTime?: Date; maxUsagePoints: number };
}

/** A key as the repository returns it: ids are hex strings. */
export type ApiKeyRecord = Plain<ApiKeyDoc>;

export const API_KEY_INDEXES: IndexDeclaration[] = [
  { collection: 'openapis', key: { apiKeyDigest: 1 }, options: { unique: true } },
  // The list, newest first: a team's keys of an app (or its global ones: "appId absent" reads the
  // index's null entries, one point), and one member's (`tmbId`, whose prefix also serves the
  // count before an insert).
  { collection: 'openapis', key: { teamId: 1, appId: 1, _id: -1 } },
  { collection: 'openapis', key: { tmbId: 1, appId: 1, _id: -1 } },
];

/** Indexes of earlier versions the ones above replace (a prefix of one of them): none reads them. */
export const RETIRED_API_KEY_INDEXES: IndexDeclaration[] = [
  { collection: 'openapis', key: { teamId: 1, appId: 1 } },
  { collection: 'openapis', key: { tmbId: 1, appId: 1 } },
];

export function digestApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** Keys adopted per write at start-up. */
const ADOPT_BATCH = 500;

/** Writes that change or remove a key move the credential epoch, naming the key (an app delete's keys: their team): processes cache resolved keys. */
export function createApiKeysRepo(db: Db, revocations: CredentialRevocations) {
  const keys = db.collection<ApiKeyDoc>('openapis');
  /** Global keys are the ones without an app ("appId absent"). */
  const appScope = (appId: string | undefined): Filter<ApiKeyDoc> => (appId ? { appId } : { appId: { $exists: false } });
  const record = (doc: ApiKeyDoc | null): ApiKeyRecord | null => plainOrNull(doc);
  const locks = createMongoLocks(db);
  // Reaching the limit refuses the key from now on, in every process that cached it (the
  // authenticator's rule, so both agree on when that is).
  const reachedLimit = (after: ApiKeyDoc | null) => usedUp(after?.limit?.maxUsagePoints, after?.usagePoints ?? 0);
  // FerretDB rewrites a whole document per update, so concurrent charges, or a charge and any other
  // write of the key (touch, update), lose one another: every write of a key goes under its lock,
  // and a process's concurrent charges of one key share one write (infra/serial-increments.ts).
  const points = createSerialIncrements(
    locks,
    (id) => `openapis:key:${oid(id).toHexString()}`,
    (id, delta, alone) =>
      revoking(revocations, () => alone(() => keys.findOneAndUpdate({ _id: oid(id) }, { $inc: { usagePoints: delta } }, { returnDocument: 'after' })), reachedLimit, [credentialSubject.apiKey(id)]),
    'Another change to this API key is in progress, try again',
  );

  return {
    findByDigest: async (digest: string) => record(await keys.findOne({ apiKeyDigest: digest })),
    /**
     * Keys of a reused FastGPT database, which stores each key itself (`apiKey`) and no digest: each
     * gets its digest and tail and loses the key itself, so it keeps working here and is no longer
     * readable in the database. A document without a usable key gets a digest no key has (a hex
     * digest holds no ':'), as the unique digest index counts a missing field as null on MongoDB and
     * two such documents would stop its build. Run before the indexes are built; idempotent.
     */
    async adoptReferenceKeys(): Promise<number> {
      const stored = db.collection<{ _id: ObjectId; apiKey?: unknown; apiKeyDigest?: string }>('openapis');
      let adopted = 0;
      for (;;) {
        const batch = await stored.find({ apiKeyDigest: { $exists: false } }, { projection: { _id: 1, apiKey: 1 } }).limit(ADOPT_BATCH).toArray();
        if (batch.length === 0) return adopted;
        await stored.bulkWrite(
          batch.map((doc) => {
            const key = typeof doc.apiKey === 'string' && doc.apiKey ? doc.apiKey : null;
            const fields = key ? { apiKeyDigest: digestApiKey(key), apiKeyTail: key.slice(-4) } : { apiKeyDigest: `unusable:${doc._id.toHexString()}`, apiKeyTail: '' };
            return { updateOne: { filter: { _id: doc._id, apiKeyDigest: { $exists: false } }, update: { $set: fields, $unset: { apiKey: '' } } } };
          }),
        );
        adopted += batch.length;
      }
    },
    findInTeam: async (id: string, teamId: string) => record(await keys.findOne({ _id: oid(id), teamId: oid(teamId) })),
    /**
     * Inserts the key unless its creator already has `max` in its scope (an app's keys, or the
     * global ones): null then. Counted and inserted under one lock per scope, so parallel
     * creates cannot all pass the count.
     */
    async insertWithin(max: number, input: Omit<ApiKeyRecord, '_id' | 'createTime' | 'usagePoints'>): Promise<ApiKeyRecord | null> {
      const scope = { teamId: oid(input.teamId), tmbId: oid(input.tmbId), ...appScope(input.appId) };
      return locks.withLock(`openapis:${input.tmbId}:${input.appId ?? 'global'}`, async () => {
        if ((await keys.countDocuments(scope)) >= max) return null;
        const doc: ApiKeyDoc = { _id: new ObjectId(), createTime: new Date(), usagePoints: 0, ...input, teamId: oid(input.teamId), tmbId: oid(input.tmbId) };
        await keys.insertOne(doc);
        return plain(doc);
      });
    },
    /** Newest first; `tmbId` narrows to one creator's keys. */
    async list(teamId: string, appId: string | undefined, tmbId?: string): Promise<ApiKeyRecord[]> {
      const docs = await keys
        .find({ teamId: oid(teamId), ...appScope(appId), ...(tmbId ? { tmbId: oid(tmbId) } : {}) })
        .sort({ _id: -1 })
        .toArray();
      return docs.map((doc) => plain(doc));
    },
    /** Answers whether the key still exists (with nothing to set, true without a write). */
    async update(id: string, teamId: string, fields: { name?: string; limit?: ApiKeyRecord['limit'] }): Promise<boolean> {
      const $set = Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
      if (Object.keys($set).length === 0) return true;
      const write = () => points.alone(id, () => keys.updateOne({ _id: oid(id), teamId: oid(teamId) }, { $set }));
      const result = await revoking(revocations, write, (written) => written.matchedCount > 0, [credentialSubject.apiKey(id)]);
      return result.matchedCount > 0;
    },
    async delete(id: string, teamId: string): Promise<void> {
      await revoking(revocations, () => keys.deleteOne({ _id: oid(id), teamId: oid(teamId) }), always, [credentialSubject.apiKey(id)]);
    },
    /** Sets `lastUsedTime` unless another process set it after `unlessAfter`. */
    async touch(id: string, at: Date, unlessAfter: Date): Promise<void> {
      await points.alone(id, () => keys.updateOne({ _id: oid(id), $or: [{ lastUsedTime: { $exists: false } }, { lastUsedTime: { $lt: unlessAfter } }] }, { $set: { lastUsedTime: at } }));
    },
    /** Resolves once written, and once the key is revoked everywhere when the charge reached its limit. */
    addUsagePoints(id: string, charged: number): Promise<void> {
      return points.add(id, charged);
    },
    /** Cascade of an app delete: the apps' keys go with them. */
    async deleteByApps(teamId: string, appIds: string[]): Promise<void> {
      if (appIds.length === 0) return;
      await revoking(revocations, () => keys.deleteMany({ teamId: oid(teamId), appId: { $in: appIds } }), (result) => result.deletedCount > 0, [credentialSubject.team(teamId)]);
    },
  };
}

export type ApiKeysRepo = ReturnType<typeof createApiKeysRepo>;
