/**
 * The credential epoch's revocation links as stored: documents of the version stamps collection
 * (`identity:credentials@<n>`, inserted only) and the previous version's single epoch stamp
 * (`identity:credentials`). The chain's logic is credential-epoch.ts.
 */
import type { Db } from 'mongodb';
import { escapeRegex, isDuplicateKeyError } from '../../infra/mongo.js';
import { VERSION_STAMPS_COLLECTION } from '../../infra/version-stamps.js';

export const CREDENTIALS_STAMP = 'identity:credentials';

/** The `_id` of the n-th revocation link. */
export const revocationLinkKey = (seq: number): string => `${CREDENTIALS_STAMP}@${seq}`;

interface EpochDoc {
  _id: string;
  value: string;
  at: Date;
  /** On links: the link's place, and what it revoked (null: everything). */
  seq?: number;
  subjects?: string[] | null;
}

/** A link as read: its place and what it revoked (null: everything). */
export interface StoredLink {
  seq: number;
  subjects: readonly string[] | null;
}

const subjectsOf = (doc: Pick<EpochDoc, 'subjects'>): readonly string[] | null =>
  Array.isArray(doc.subjects) ? doc.subjects.filter((subject): subject is string => typeof subject === 'string') : null;

export function createRevocationLinksRepo(db: Db) {
  const stamps = db.collection<EpochDoc>(VERSION_STAMPS_COLLECTION);
  return {
    /** Link `seq`'s subjects, or undefined when it is not stored. */
    async find(seq: number): Promise<readonly string[] | null | undefined> {
      const doc = await stamps.findOne({ _id: revocationLinkKey(seq) }, { projection: { subjects: 1 } });
      return doc ? subjectsOf(doc) : undefined;
    },

    /** The links stored among these places, in one command. */
    async findMany(places: number[]): Promise<StoredLink[]> {
      const docs = await stamps.find({ _id: { $in: places.map(revocationLinkKey) } }, { projection: { seq: 1, subjects: 1 } }).toArray();
      return docs.flatMap((doc) => (typeof doc.seq === 'number' ? [{ seq: doc.seq, subjects: subjectsOf(doc) }] : []));
    },

    /** The highest link stored: 0 before the first revocation. */
    async highest(): Promise<number> {
      const doc = await stamps.find({ seq: { $gte: 1 } }, { projection: { seq: 1 } }).sort({ seq: -1 }).limit(1).next();
      return typeof doc?.seq === 'number' && Number.isSafeInteger(doc.seq) ? doc.seq : 0;
    },

    /** Whether link `seq` is stored. */
    async exists(seq: number): Promise<boolean> {
      return (await stamps.findOne({ _id: revocationLinkKey(seq) }, { projection: { _id: 1 } })) !== null;
    },

    /** Whether any revocation was ever written (by this version or the previous): it leaves the epoch stamp. */
    async anyWritten(): Promise<boolean> {
      return (await stamps.findOne({ _id: CREDENTIALS_STAMP }, { projection: { _id: 1 } })) !== null;
    },

    /** Inserts link `seq`; false when another revocation took the place. */
    async insert(seq: number, subjects: readonly string[] | null, at: Date): Promise<boolean> {
      try {
        await stamps.insertOne({ _id: revocationLinkKey(seq), value: String(seq), at, seq, subjects: subjects ? [...subjects] : null });
        return true;
      } catch (error) {
        if (isDuplicateKeyError(error)) return false;
        throw error;
      }
    },

    /** The previous version's epoch stamp, which its replicas read: set to `seq`. */
    async writeLegacyStamp(seq: number, at: Date): Promise<void> {
      await stamps.replaceOne({ _id: CREDENTIALS_STAMP }, { value: String(seq), at }, { upsert: true }).catch((error: unknown) => {
        if (!isDuplicateKeyError(error)) throw error;
      });
    },

    /** Deletes the links below place `below` written before `before`; answers how many. */
    async prune(below: number, before: Date): Promise<number> {
      const result = await stamps.deleteMany({ _id: { $regex: `^${escapeRegex(CREDENTIALS_STAMP)}@` }, seq: { $lt: below }, at: { $lt: before } });
      return result.deletedCount;
    },
  };
}

export type RevocationLinksRepo = ReturnType<typeof createRevocationLinksRepo>;
