import { type Db, ObjectId } from 'mongodb';
import type { IndexDeclaration } from '../../infra/mongo.js';
import { type CredentialRevocations, revokedIf } from './credential-epoch.js';

/**
 * Server-side session records, so sessions can be revoked (beyond the reference): a JWT is
 * accepted only while its `sid` row exists and is unexpired. Logout deletes the row (and bumps
 * the credential epoch, so no process keeps trusting the session).
 */
export interface SessionDoc {
  _id: ObjectId;
  userId: ObjectId;
  tmbId: ObjectId;
  createTime: Date;
  expiresAt: Date;
}

export const SESSION_INDEXES: IndexDeclaration[] = [
  { collection: 'user_sessions', key: { userId: 1 } },
  { collection: 'user_sessions', key: { expiresAt: 1 } },
];

export function createSessionsRepo(db: Db, revocations: CredentialRevocations) {
  const sessions = db.collection<SessionDoc>('user_sessions');
  return {
    async create(input: Omit<SessionDoc, '_id'>): Promise<SessionDoc> {
      const doc = { _id: new ObjectId(), ...input };
      await sessions.insertOne(doc);
      return doc;
    },
    find: (id: ObjectId) => sessions.findOne({ _id: id }),
    async revoke(id: ObjectId): Promise<void> {
      const result = await sessions.deleteOne({ _id: id });
      await revokedIf(revocations, result.deletedCount > 0);
    },
    /** Ends every session of the user except `keep` (the caller's own, when given). */
    async revokeAllOf(userId: ObjectId, keep?: ObjectId): Promise<void> {
      const result = await sessions.deleteMany(keep ? { userId, _id: { $ne: keep } } : { userId });
      await revokedIf(revocations, result.deletedCount > 0);
    },
    /** FerretDB has no TTL indexes: expired rows are removed periodically instead (expiry is checked on use). */
    async deleteExpired(now: Date): Promise<number> {
      const result = await sessions.deleteMany({ expiresAt: { $lte: now } });
      return result.deletedCount;
    },
  };
}

export type SessionsRepo = ReturnType<typeof createSessionsRepo>;
