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
  /** Set once a grant that stored it passed its last check and hands it out (see confirmDigests). */
  confirmed?: boolean;
}

export const TOKEN_INDEXES: readonly IndexDeclaration[] = [
  { collection: TOKENS, key: { username: 1 }, options: { name: 'username' } },
  { collection: TOKENS, key: { expiresAt: 1 }, options: { name: 'expires' } },
];

export function createTokensRepo(db: Db) {
  const tokens = db.collection<AllowedToken>(TOKENS);
  return {
    /**
     * Two grants of one user within the same second yield the same JWT, so the entry may exist
     * already (or be inserted concurrently): either way the token is allowed, and an entry that
     * exists is left as it is (a confirmed one stays confirmed).
     */
    async save(entry: AllowedToken): Promise<void> {
      try {
        await tokens.updateOne({ _id: entry._id }, { $setOnInsert: entry }, { upsert: true });
      } catch (error) {
        if (!isDuplicateKeyError(error)) throw error;
      }
    },
    /** Marks the entries as handed out by a grant whose checks passed. */
    confirmDigests: async (digests: readonly string[]) => {
      for (const _id of digests) await tokens.updateOne({ _id }, { $set: { confirmed: true } });
    },
    /** Deletes the entries no grant has confirmed; by `_id` each: an `$in` read every allowed token of the deployment on FerretDB. */
    deleteUnconfirmed: async (digests: readonly string[]) => {
      await deleteEach(tokens, digests.map((_id) => ({ _id, confirmed: { $ne: true } })));
    },
    find: (digest: string) => tokens.findOne({ _id: digest }),
    /** Deletes every entry of the user, or only those issued before `issuedBefore`. */
    deleteForUser: async (username: string, issuedBefore?: Date) =>
      (await tokens.deleteMany(issuedBefore ? { username, issuedAt: { $lt: issuedBefore } } : { username })).deletedCount,
    deleteExpired: async (now: Date) => (await tokens.deleteMany({ expiresAt: { $lte: now } })).deletedCount,
    countForUser: (username: string) => tokens.countDocuments({ username }),
  };
}

export type TokensRepo = ReturnType<typeof createTokensRepo>;
