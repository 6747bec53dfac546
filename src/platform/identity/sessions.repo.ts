import { type Db, ObjectId } from 'mongodb';
import type { IndexDeclaration } from '../../infra/mongo.js';
import { oid, type Plain, plain, plainOrNull } from '../../infra/plain-record.js';
import { always, type CredentialRevocations, credentialSubject, revoking } from './credential-epoch.js';

/**
 * Server-side session records, so sessions can be revoked (beyond the reference): a JWT is
 * accepted only while its `sid` row exists and is unexpired. Logout deletes the row (and moves
 * the credential epoch, so no process keeps trusting the session).
 */
interface SessionDoc {
  _id: ObjectId;
  userId: ObjectId;
  tmbId: ObjectId;
  createTime: Date;
  expiresAt: Date;
}

/** A session as the repository returns it: ids are hex strings. */
export type SessionRecord = Plain<SessionDoc>;

export const SESSION_INDEXES: IndexDeclaration[] = [
  { collection: 'user_sessions', key: { userId: 1 } },
  { collection: 'user_sessions', key: { expiresAt: 1 } },
];

export function createSessionsRepo(db: Db, revocations: CredentialRevocations) {
  const sessions = db.collection<SessionDoc>('user_sessions');
  return {
    async create(input: Omit<SessionRecord, '_id'>): Promise<SessionRecord> {
      const doc: SessionDoc = { _id: new ObjectId(), userId: oid(input.userId), tmbId: oid(input.tmbId), createTime: input.createTime, expiresAt: input.expiresAt };
      await sessions.insertOne(doc);
      return plain(doc);
    },
    async find(id: string): Promise<SessionRecord | null> {
      const doc = await sessions.findOne({ _id: oid(id) });
      return plainOrNull(doc);
    },
    /**
     * Ends a session. The epoch moves even when nothing was left to delete: another request
     * ending the same session may have deleted it and not yet moved the epoch, and this one must not
     * answer "ended" while a replica still trusts its cached copy.
     */
    async revoke(id: string): Promise<void> {
      await revoking(revocations, () => sessions.deleteOne({ _id: oid(id) }), always, [credentialSubject.session(id)]);
    },
    /** Deletes a session whose token was never handed out: no process can hold it, so the epoch stays. */
    async discard(id: string): Promise<void> {
      await sessions.deleteOne({ _id: oid(id) });
    },
    /** Ends every session of the user except `keep` (the caller's own, when given); the epoch moves whatever was left, as for `revoke`. */
    async revokeAllOf(userId: string, keep?: string): Promise<void> {
      const user = oid(userId);
      const others = keep ? { userId: user, _id: { $ne: oid(keep) } } : { userId: user };
      await revoking(revocations, () => sessions.deleteMany(others), always, [credentialSubject.user(userId)]);
    },
    /** FerretDB has no TTL indexes: expired rows are removed periodically instead (expiry is checked on use). */
    async deleteExpired(now: Date): Promise<number> {
      const result = await sessions.deleteMany({ expiresAt: { $lte: now } });
      return result.deletedCount;
    },
  };
}

export type SessionsRepo = ReturnType<typeof createSessionsRepo>;
