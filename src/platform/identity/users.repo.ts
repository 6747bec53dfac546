import { type Db, ObjectId } from 'mongodb';
import type { IndexDeclaration } from '../../infra/mongo.js';

/** A `users` document (reference collection and field names). */
export interface UserDoc {
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

export const USER_INDEXES: IndexDeclaration[] = [
  { collection: 'users', key: { username: 1 }, options: { unique: true } },
  { collection: 'users', key: { createTime: -1 } },
];

export const DEFAULT_USER_AVATAR = '/icon/human.svg';

export function createUsersRepo(db: Db) {
  const users = db.collection<UserDoc>('users');
  return {
    findById: (id: ObjectId) => users.findOne({ _id: id }),
    findByUsername: (username: string) => users.findOne({ username }),
    async insert(input: { _id?: ObjectId; username: string; password: string }): Promise<UserDoc> {
      const doc: UserDoc = {
        _id: input._id ?? new ObjectId(),
        username: input.username,
        password: input.password,
        status: 'active',
        avatar: DEFAULT_USER_AVATAR,
        timezone: 'Asia/Shanghai',
        createTime: new Date(),
        promotionRate: 15,
      };
      await users.insertOne(doc);
      return doc;
    },
    async setPassword(id: ObjectId, password: string): Promise<boolean> {
      const result = await users.updateOne({ _id: id }, { $set: { password } });
      return result.matchedCount === 1;
    },
    /** Sets only the given fields; an absent field is left as it is. */
    async updateProfile(id: ObjectId, fields: Partial<Pick<UserDoc, 'avatar' | 'timezone' | 'openaiAccount'>>): Promise<void> {
      const $set = Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
      if (Object.keys($set).length > 0) await users.updateOne({ _id: id }, { $set });
    },
    async setLastLoginTmb(id: ObjectId, tmbId: ObjectId): Promise<void> {
      await users.updateOne({ _id: id }, { $set: { lastLoginTmbId: tmbId } });
    },
  };
}

export type UsersRepo = ReturnType<typeof createUsersRepo>;
