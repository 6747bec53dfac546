import type { Db } from 'mongodb';
import { deleteEach, type IndexDeclaration, isDuplicateKeyError } from '../../infra/mongo.js';
import type { TokenType } from './jwt.js';

const TOKENS = 'cluster_tokens';

/** The allow-list: a token is valid only while its SHA-256 digest is stored here. */
export interface AllowedToken {
  _id: string;
  username: string;
  tokenType: TokenType;
  expiresAt: Date;
  issuedAt: Date;
}

export const TOKEN_INDEXES: readonly IndexDeclaration[] = [
  { collection: TOKENS, key: { username: 1 }, options: { name: 'username' } },
  { collection: TOKENS, key: { expiresAt: 1 }, options: { name: 'expires' } },
];

export function createTokensRepo(db: Db) {
  const tokens = db.collection<AllowedToken>(TOKENS);
  return {
    /**
     * Two logins of one user within the same second yield the same JWT, so the entry may exist
     * already (or be inserted concurrently): either way the token is allowed.
     */
    async save(entry: AllowedToken): Promise<void> {
      try {
        await tokens.replaceOne({ _id: entry._id }, entry, { upsert: true });
      } catch (error) {
        if (!isDuplicateKeyError(error)) throw error;
      }
    },
    find: (digest: string) => tokens.findOne({ _id: digest }),
    /** Deletes every entry of the user but `keep` (digests). */
    deleteForUser: async (username: string, keep: readonly string[] = []) =>
      (await tokens.deleteMany(keep.length > 0 ? { username, _id: { $nin: [...keep] } } : { username })).deletedCount,
    deleteDigests: async (digests: readonly string[]) => {
      // By `_id` each: an `$in` read every allowed token of the deployment on FerretDB.
      await deleteEach(tokens, digests.map((_id) => ({ _id })));
    },
    deleteExpired: async (now: Date) => (await tokens.deleteMany({ expiresAt: { $lte: now } })).deletedCount,
    countForUser: (username: string) => tokens.countDocuments({ username }),
  };
}

export type TokensRepo = ReturnType<typeof createTokensRepo>;
