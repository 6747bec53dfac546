import type { Db } from 'mongodb';
import { ObjectId } from 'mongodb';
import type { IndexDeclaration } from '../../infra/mongo.js';

const USERS = 'cluster_users';
const LOGIN_RECORDS = 'cluster_login_records';

export type AccountState = 'Active' | 'Disabled' | 'AuthLimitExceeded';

export interface ClusterAccount {
  /** The user name (unique, lowercase). */
  _id: string;
  email: string;
  passwordHash: string;
  state: AccountState;
  reason: string;
  lastTransitionTime: Date;
  lastLoginTime: Date | null;
  /** The password was never changed (default admin): tokens carry extra.uninitialized. */
  uninitialized: boolean;
  groups: string[];
  createdAt: Date;
  passwordChangedAt: Date;
}

export interface LoginRecord {
  _id: ObjectId;
  username: string;
  type: 'Token' | 'Password';
  provider: string;
  sourceIP: string;
  userAgent: string;
  success: boolean;
  reason: string;
  createdAt: Date;
}

export const ACCOUNT_INDEXES: readonly IndexDeclaration[] = [
  { collection: USERS, key: { email: 1 }, options: { name: 'email', unique: true } },
  // A user's records newest first, then `_id` (list and trim); also the failure count's range.
  // A new name: MongoDB refuses another key under an existing index's name.
  { collection: LOGIN_RECORDS, key: { username: 1, createdAt: -1, _id: -1 }, options: { name: 'user_created_id' } },
  { collection: LOGIN_RECORDS, key: { createdAt: 1 }, options: { name: 'created' } },
];

/** Indexes of earlier versions the ones above replace (a prefix of one of them): none reads them. */
export const RETIRED_ACCOUNT_INDEXES: readonly IndexDeclaration[] = [{ collection: LOGIN_RECORDS, key: { username: 1, createdAt: -1 }, options: { name: 'user_created' } }];

export function createAccountsRepo(db: Db) {
  const users = db.collection<ClusterAccount>(USERS);
  const records = db.collection<LoginRecord>(LOGIN_RECORDS);
  return {
    findByName: (name: string) => users.findOne({ _id: name }),
    findByEmail: (email: string) => users.findOne({ email }),
    /** What a login reads again once its tokens are stored (every password write stores a new salted hash). */
    findLoginMarker: (name: string) => users.findOne<Pick<ClusterAccount, 'passwordHash' | 'state'>>({ _id: name }, { projection: { _id: 0, passwordHash: 1, state: 1 } }),
    insert: (account: ClusterAccount) => users.insertOne(account),

    /** Changes the state only if it is still `from` (concurrent logins do not flap it). */
    async transition(name: string, from: AccountState | null, to: AccountState, reason: string, at: Date): Promise<boolean> {
      const filter = from ? { _id: name, state: from } : { _id: name };
      const result = await users.updateOne(filter, { $set: { state: to, reason, lastTransitionTime: at } });
      return result.matchedCount > 0;
    },

    async setPassword(name: string, passwordHash: string, at: Date): Promise<boolean> {
      const result = await users.updateOne({ _id: name }, { $set: { passwordHash, passwordChangedAt: at, uninitialized: false } });
      return result.matchedCount > 0;
    },

    touchLastLogin: (name: string, at: Date) => users.updateOne({ _id: name }, { $set: { lastLoginTime: at } }),

    addLoginRecord: (record: Omit<LoginRecord, '_id'>) => records.insertOne({ _id: new ObjectId(), ...record }),

    countFailuresSince: (username: string, since: Date) => records.countDocuments({ username, success: false, createdAt: { $gt: since } }),

    listLoginRecords: (username: string) => records.find({ username }).sort({ createdAt: -1, _id: -1 }).toArray(),

    /** Keeps the newest `keep` records of a user. */
    async trimLoginRecords(username: string, keep: number): Promise<void> {
      const extra = await records.find({ username }, { projection: { _id: 1 } }).sort({ createdAt: -1, _id: -1 }).skip(keep).toArray();
      if (extra.length > 0) await records.deleteMany({ _id: { $in: extra.map((record) => record._id) } });
    },

    deleteLoginRecordsBefore: async (cutoff: Date) => (await records.deleteMany({ createdAt: { $lt: cutoff } })).deletedCount,
  };
}

export type AccountsRepo = ReturnType<typeof createAccountsRepo>;
