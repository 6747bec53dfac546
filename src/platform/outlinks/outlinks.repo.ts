/** The only code touching `outlinks` (share links and messaging-channel links). */
import { type Db, ObjectId } from 'mongodb';
import type { IndexDeclaration } from '../../infra/mongo.js';
import { createMongoLocks } from '../../infra/mongo-lock.js';
import { decodeFromStorage, encodeForStorage } from '../../infra/storage-codec.js';
import { oid, oids, type Plain, plain } from '../../infra/plain-record.js';
import { createSerialIncrements } from '../../infra/serial-increments.js';

export const OUTLINKS = 'outlinks';
export const OUTLINK_INDEXES: IndexDeclaration[] = [
  { collection: OUTLINKS, key: { shareId: -1 } },
  // An app's links of one type, newest first (list); its prefix serves the cascade of app deletes.
  { collection: OUTLINKS, key: { teamId: 1, appId: 1, type: 1, _id: -1 } },
];

/** Indexes of earlier versions the ones above replace (a prefix of one of them): none reads them. */
export const RETIRED_OUTLINK_INDEXES: IndexDeclaration[] = [{ collection: OUTLINKS, key: { teamId: 1, appId: 1 } }];

export type OutLinkType = 'share' | 'iframe' | 'apikey' | 'feishu' | 'wecom' | 'official_account';

export interface OutLinkLimit {
  maxUsagePoints: number;
  expiredTime?: Date;
  QPM: number;
  hookUrl?: string;
}

interface StoredOutLink {
  _id: ObjectId;
  shareId: string;
  teamId: ObjectId;
  tmbId: ObjectId;
  appId: ObjectId;
  type: OutLinkType;
  name: string;
  usagePoints: number;
  lastTime?: Date;
  responseDetail: boolean;
  limit: OutLinkLimit;
  app?: Record<string, unknown>;
  immediateResponse?: string;
  defaultResponse?: string;
}

/** A link as the repository returns it: ids as hex strings, `app` decoded. */
export type OutLinkDoc = Plain<StoredOutLink>;

export interface NewOutLink {
  shareId: string;
  teamId: string;
  tmbId: string;
  appId: string;
  type: OutLinkType;
  name: string;
  responseDetail: boolean;
  limit: OutLinkLimit;
  app?: Record<string, unknown>;
  immediateResponse?: string;
  defaultResponse?: string;
}

const decode = (doc: StoredOutLink): OutLinkDoc => ({ ...plain(doc), app: doc.app ? (decodeFromStorage(doc.app) as Record<string, unknown>) : undefined });

export function createOutLinksRepo(db: Db) {
  const links = db.collection<StoredOutLink>(OUTLINKS);
  /** The latest use of each link with points waiting for their write (set with them). */
  const lastUsed = new Map<string, Date>();
  // FerretDB rewrites a whole document per update, so concurrent charges, or a charge and any other
  // write of the link (touch, update), lose one another: every write of a link goes under its lock,
  // and a process's concurrent charges of one link share one write (infra/serial-increments.ts).
  const points = createSerialIncrements(
    createMongoLocks(db),
    (shareId) => `outlinks:${shareId}`,
    async (shareId, delta, alone) => {
      const lastTime = lastUsed.get(shareId) ?? new Date();
      await alone(() => links.updateOne({ shareId }, { $inc: { usagePoints: delta }, $set: { lastTime } }));
      // A later use keeps its own time for its own write.
      if (lastUsed.get(shareId) === lastTime) lastUsed.delete(shareId);
    },
    'Another change to this share link is in progress, try again',
  );
  return {
    async insert(link: NewOutLink): Promise<string> {
      await links.insertOne({
        _id: new ObjectId(),
        ...link,
        teamId: oid(link.teamId),
        tmbId: oid(link.tmbId),
        appId: oid(link.appId),
        usagePoints: 0,
        app: link.app ? (encodeForStorage(link.app) as Record<string, unknown>) : undefined,
      });
      return link.shareId;
    },
    async findByShareId(shareId: string): Promise<OutLinkDoc | null> {
      const doc = await links.findOne({ shareId });
      return doc ? decode(doc) : null;
    },
    async findById(id: string): Promise<OutLinkDoc | null> {
      const doc = await links.findOne({ _id: oid(id) });
      return doc ? decode(doc) : null;
    },
    async list(teamId: string, appId: string, type: string): Promise<OutLinkDoc[]> {
      const docs = await links.find({ teamId: oid(teamId), appId: oid(appId), type: type as OutLinkType }).sort({ _id: -1 }).toArray();
      return docs.map(decode);
    },
    async update(id: string, set: Partial<Omit<OutLinkDoc, '_id' | 'teamId' | 'tmbId' | 'appId' | 'shareId'>>): Promise<void> {
      const clean: Record<string, unknown> = Object.fromEntries(Object.entries(set).filter(([, v]) => v !== undefined));
      if (clean.app) clean.app = encodeForStorage(clean.app);
      if (Object.keys(clean).length === 0) return;
      // Under the link's lock, like its charges (the share id never changes).
      const link = await links.findOne({ _id: oid(id) }, { projection: { shareId: 1 } });
      if (link) await points.alone(link.shareId, () => links.updateOne({ _id: oid(id) }, { $set: clean }));
    },
    async delete(id: string): Promise<void> {
      await links.deleteOne({ _id: oid(id) });
    },
    /** Cascade of an app delete: the apps' share links go with them. */
    async deleteByApps(teamId: string, appIds: string[]): Promise<void> {
      if (appIds.length > 0) await links.deleteMany({ teamId: oid(teamId), appId: { $in: oids(appIds) } });
    },
    /** Resolves once written. */
    addUsage(shareId: string, charged: number, now: Date): Promise<void> {
      const latest = lastUsed.get(shareId);
      if (!latest || latest < now) lastUsed.set(shareId, now);
      return points.add(shareId, charged);
    },
    /** Sets `lastTime` unless another process set it after `unlessAfter`. */
    async touch(shareId: string, at: Date, unlessAfter: Date): Promise<void> {
      await points.alone(shareId, () => links.updateOne({ shareId, $or: [{ lastTime: { $exists: false } }, { lastTime: { $lt: unlessAfter } }] }, { $set: { lastTime: at } }));
    },
  };
}

export type OutLinksRepo = ReturnType<typeof createOutLinksRepo>;
