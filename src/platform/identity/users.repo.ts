import { type Db, ObjectId } from 'mongodb';
import type { IndexDeclaration } from '../../infra/mongo.js';
import { newId, oid, type Plain, plain, plainOrNull } from '../../infra/plain-record.js';
import { type CredentialRevocations, credentialSubject, revoking } from './credential-epoch.js';

/** A `users` document (reference collection and field names). */
interface UserDoc {
  _id: ObjectId;
  username: string;
  /** scrypt hash, see password.ts; never leaves this module. */
  password: string;
  status: 'active' | 'forbidden';
  avatar: string;
  timezone: string;
  createTime: Date;
  promotionRate: number;
  openaiAccount?: { key: string; baseUrl: string } | null;
  lastLoginTmbId?: ObjectId;
}

/** A user as the repository returns it: ids are hex strings. */
export type UserRecord = Plain<UserDoc>;

export const USER_INDEXES: IndexDeclaration[] = [
  { collection: 'users', key: { username: 1 }, options: { unique: true } },
  { collection: 'users', key: { createTime: -1 } },
];

export const DEFAULT_USER_AVATAR = '/icon/human.svg';

/** A profile change of a field the cached auth context carries (`timezone`) moves the credential epoch, naming the user. */
export function createUsersRepo(db: Db, revocations: CredentialRevocations) {
  const users = db.collection<UserDoc>('users');
  const record = (doc: UserDoc | null): UserRecord | null => plainOrNull(doc);
  return {
    /** An id for a user written later (its team and membership are written first). */
    newId,
    findById: async (id: string) => record(await users.findOne({ _id: oid(id) })),
    findByUsername: async (username: string) => record(await users.findOne({ username })),
    async insert(input: { _id?: string; username: string; password: string }): Promise<UserRecord> {
      const doc: UserDoc = {
        _id: input._id ? oid(input._id) : new ObjectId(),
        username: input.username,
        password: input.password,
        status: 'active',
        avatar: DEFAULT_USER_AVATAR,
        timezone: 'Asia/Shanghai',
        createTime: new Date(),
        promotionRate: 15,
      };
      await users.insertOne(doc);
      return plain(doc);
    },
    /**
     * What a login reads again once its session is stored: every password write stores a new
     * salted hash, so a changed hash means the password was changed or reset in between.
     */
    async findLoginMarker(id: string): Promise<Pick<UserRecord, 'password' | 'status'> | null> {
      const doc = await users.findOne({ _id: oid(id) }, { projection: { password: 1, status: 1 } });
      return doc ? { password: doc.password, status: doc.status } : null;
    },
    /**
     * With `expectedHash`, a compare-and-set: written only while the stored hash is still the one
     * the caller checked (every write stores a new salted hash). Answers whether it was written.
     */
    async setPassword(id: string, password: string, expectedHash?: string): Promise<boolean> {
      const filter = expectedHash === undefined ? { _id: oid(id) } : { _id: oid(id), password: expectedHash };
      const result = await users.updateOne(filter, { $set: { password } });
      return result.matchedCount === 1;
    },
    /** Sets only the given fields; an absent field is left as it is. */
    async updateProfile(id: string, fields: Partial<Pick<UserDoc, 'avatar' | 'timezone' | 'openaiAccount'>>): Promise<void> {
      const $set = Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
      if (Object.keys($set).length === 0) return;
      const write = () => users.updateOne({ _id: oid(id) }, { $set });
      if (fields.timezone === undefined) await write();
      else await revoking(revocations, write, (result) => result.matchedCount > 0, [credentialSubject.user(id)]);
    },
    async setLastLoginTmb(id: string, tmbId: string): Promise<void> {
      await users.updateOne({ _id: oid(id) }, { $set: { lastLoginTmbId: oid(tmbId) } });
    },
  };
}

export type UsersRepo = ReturnType<typeof createUsersRepo>;
