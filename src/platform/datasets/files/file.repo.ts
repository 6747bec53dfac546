import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { GridFSBucket, type Db, ObjectId } from 'mongodb';
import { expired } from '../../../domain/credential-limits.js';
import { findEachById, type IndexDeclaration, isObjectIdHex } from '../../../infra/mongo.js';
import { oid } from '../../../infra/plain-record.js';

export const BUCKET_NAMES = ['dataset', 'chat'] as const;
export type BucketName = (typeof BUCKET_NAMES)[number];

/** Marks (`metadata.uploadedBy`) of chat files and images stored by share-page and team-space visitors. */
export const VISITOR_UPLOADERS = ['outLink', 'teamDomain'] as const;
export type VisitorUploader = (typeof VISITOR_UPLOADERS)[number];
/** The only bucket visitors may write. */
const CHAT_FILES: `${BucketName}.files` = 'chat.files';

export interface StoredFile {
  _id: string;
  length: number;
  chunkSize: number;
  uploadDate: Date;
  filename: string;
  contentType: string;
  metadata: { teamId: string; tmbId: string; encoding?: string; uploadedBy?: VisitorUploader; [key: string]: unknown };
}

interface ImageDoc {
  _id: ObjectId;
  teamId: ObjectId;
  createTime: Date;
  expiredTime?: Date;
  binary: Buffer;
  type: string;
  /** `size`: bytes of `binary`, summed by the visitor upload bound (no engine-neutral way to sum binary sizes). */
  metadata: { mime: string; relatedId?: string; size?: number; uploadedBy?: VisitorUploader };
}

/**
 * Top-level copies of a chat file's team, chat and app (the GridFS metadata keeps the originals).
 * A chat's delete finds its files by these: FerretDB 1.24 passes no dotted path down, so a
 * `metadata.chatId` filter read every chat file of the deployment. `appId` is the app's id, or
 * `NO_APP` when the metadata names none (a value any engine compares by equality, unlike null).
 */
export interface ChatFileOwner {
  teamId: ObjectId;
  chatId: string;
  appId: ObjectId | string;
}
export const NO_APP = '';

const idOf = (value: unknown): ObjectId | null => (value instanceof ObjectId ? value : isObjectIdHex(value) ? new ObjectId(value) : null);

/** The owner fields of a chat file with this metadata; null when it names no valid team. */
export function chatFileOwner(metadata: Record<string, unknown> | undefined): ChatFileOwner | null {
  const teamId = idOf(metadata?.teamId);
  if (!teamId) return null;
  const app = metadata?.appId;
  const chatId = typeof metadata?.chatId === 'string' ? metadata.chatId : '';
  // An app named by something other than an id matches no app, as before; it is not "no app".
  return { teamId, chatId, appId: idOf(app) ?? (app === undefined || app === null || app === '' ? NO_APP : String(app)) };
}

export const FILE_INDEXES: IndexDeclaration[] = [
  { collection: 'dataset.files', key: { uploadDate: -1 } },
  { collection: 'images', key: { teamId: 1, 'metadata.relatedId': 1 } },
  // The expiry cleanup's range: served on MongoDB instead of a scan of every stored image.
  { collection: 'images', key: { expiredTime: 1 } },
  // The visitor upload bound's sums: a team's visitor uploads of the last day, on top-level team ids.
  { collection: CHAT_FILES, key: { teamId: 1, 'metadata.uploadedBy': 1, uploadDate: 1 } },
  { collection: 'images', key: { teamId: 1, 'metadata.uploadedBy': 1, createTime: 1 } },
];

/** The only code touching GridFS buckets and the `images` collection. */
export function createFileRepo(db: Db) {
  const bucket = (name: BucketName) => new GridFSBucket(db, { bucketName: name });
  const images = db.collection<ImageDoc>('images');
  /**
   * Where visitors' uploads are, with each one's size and time fields, scoped by the top-level
   * team id: an equality FerretDB 1.24 passes down; on MongoDB the indexes above serve it all.
   */
  const visitorSources = (teamId: string, since: Date) => {
    const team = oid(teamId);
    const uploadedBy = { $in: [...VISITOR_UPLOADERS] };
    return [
      { collection: db.collection(CHAT_FILES), match: { teamId: team, 'metadata.uploadedBy': uploadedBy, uploadDate: { $gte: since } }, size: '$length', time: 'uploadDate' },
      { collection: db.collection('images'), match: { teamId: team, 'metadata.uploadedBy': uploadedBy, createTime: { $gte: since } }, size: '$metadata.size', time: 'createTime' },
    ];
  };
  return {
    async upload(bucketName: BucketName, input: { buffer: Buffer; filename: string; contentType: string; metadata: StoredFile['metadata'] }): Promise<string> {
      const stream = bucket(bucketName).openUploadStream(input.filename, { metadata: { ...input.metadata, contentType: input.contentType } });
      await new Promise<void>((resolve, reject) => {
        Readable.from([input.buffer]).pipe(stream).on('finish', () => resolve()).on('error', reject);
      }).catch(async (error: unknown) => {
        // GridFS writes the chunks first: a file document that could not be written leaves them
        // counted by nothing (no quota, no sweep), so they go with the failure.
        await db.collection(`${bucketName}.chunks`).deleteMany({ files_id: stream.id }).catch(() => undefined);
        throw error;
      });
      const owner = bucketName === 'chat' ? chatFileOwner(input.metadata) : null;
      if (owner) {
        // GridFS writes the file document itself, so the owner fields follow in a second write; a
        // file without them would outlive its chat, so a failed write takes the file back out.
        await db
          .collection(`${bucketName}.files`)
          .updateOne({ _id: stream.id }, { $set: owner })
          .catch(async (error: unknown) => {
            await bucket(bucketName).delete(stream.id).catch(() => undefined);
            throw error;
          });
      }
      return stream.id.toHexString();
    },
    async find(bucketName: BucketName, id: string): Promise<StoredFile | null> {
      const [doc] = await bucket(bucketName).find({ _id: oid(id) }).limit(1).toArray();
      if (!doc) return null;
      const metadata = (doc.metadata ?? {}) as StoredFile['metadata'] & { contentType?: string };
      const { contentType, ...rest } = metadata;
      return {
        _id: doc._id.toHexString(),
        length: doc.length,
        chunkSize: doc.chunkSize,
        uploadDate: doc.uploadDate,
        filename: doc.filename,
        contentType: contentType ?? 'application/octet-stream',
        metadata: rest,
      };
    },
    /** Of `ids`, the chat files `owner`'s team and chat own, with the app they name (top-level owner fields: one pushed-down read on FerretDB). */
    async chatFilesOf(owner: { teamId: string; chatId: string }, ids: string[]): Promise<{ _id: string; appId: ObjectId | string }[]> {
      const valid = ids.filter((id) => isObjectIdHex(id)).map((id) => new ObjectId(id));
      if (valid.length === 0 || !isObjectIdHex(owner.teamId)) return [];
      const docs = await db
        .collection<{ _id: ObjectId } & ChatFileOwner>(CHAT_FILES)
        .find({ teamId: new ObjectId(owner.teamId), chatId: owner.chatId, _id: { $in: valid } }, { projection: { _id: 1, appId: 1 } })
        .toArray();
      return docs.map((doc) => ({ _id: doc._id.toHexString(), appId: doc.appId }));
    },
    openStream(bucketName: BucketName, id: string) {
      return bucket(bucketName).openDownloadStream(oid(id));
    },
    async readBuffer(bucketName: BucketName, id: string): Promise<Buffer> {
      const parts: Buffer[] = [];
      for await (const part of bucket(bucketName).openDownloadStream(oid(id))) parts.push(part as Buffer);
      return Buffer.concat(parts);
    },
    /**
     * Files of the `dataset` bucket uploaded in [from, to), with their team: the unused-file
     * sweep's candidates (files-sweep.ts). A range FerretDB filters itself: a read of the file
     * documents (not their chunks), once an hour.
     */
    async datasetFilesUploadedBetween(from: Date, to: Date): Promise<{ _id: string; teamId: string }[]> {
      const docs = await db
        .collection<{ _id: ObjectId; uploadDate: Date; metadata?: { teamId?: unknown } }>('dataset.files')
        .find({ uploadDate: { $gte: from, $lt: to } }, { projection: { _id: 1, metadata: 1 } })
        .toArray();
      return docs.flatMap((doc) => {
        const teamId = doc.metadata?.teamId;
        return isObjectIdHex(teamId) ? [{ _id: doc._id.toHexString(), teamId }] : [];
      });
    },
    /** Deletes the team's files among `ids` (a file of another team with one of these ids stays). */
    async deleteMany(bucketName: BucketName, teamId: string, ids: string[]) {
      // By `_id` each: FerretDB 1.24 filters an `$in` and any `metadata.*` path itself, reading the whole bucket.
      const found = await findEachById(db.collection<{ _id: ObjectId; metadata?: { teamId?: unknown } }>(`${bucketName}.files`), ids.map(oid), { _id: 1, metadata: 1 });
      for (const file of found) {
        if (String(file.metadata?.teamId) !== teamId) continue;
        await bucket(bucketName)
          .delete(file._id)
          .catch(() => undefined);
      }
    },
    async insertImage(input: { teamId: string; binary: Buffer; mime: string; type: string; relatedId?: string; expiredTime?: Date; uploadedBy?: VisitorUploader }): Promise<string> {
      const { insertedId } = await images.insertOne({
        // Images are public by id (the reference's /api/system/img/:id): a random id, since an
        // ObjectId of this process (timestamp, fixed process part, counter) lets anyone who
        // stores one image count back to every other team's.
        _id: new ObjectId(randomBytes(12)),
        teamId: oid(input.teamId),
        createTime: new Date(),
        expiredTime: input.expiredTime,
        binary: input.binary,
        type: input.type,
        metadata: { mime: input.mime, relatedId: input.relatedId, size: input.binary.length, uploadedBy: input.uploadedBy },
      } as ImageDoc);
      return insertedId.toHexString();
    },
    /**
     * Bytes of the team's chat files and images that visitors stored since `since`. What is
     * stored counts, so every replica sees the same sum; a file deleted since no longer counts.
     */
    async visitorBytesSince(teamId: string, since: Date): Promise<number> {
      const sums = await Promise.all(
        visitorSources(teamId, since).map(({ collection, match, size }) =>
          collection.aggregate<{ bytes: number }>([{ $match: match }, { $group: { _id: null, bytes: { $sum: size } } }]).toArray(),
        ),
      );
      return sums.flat().reduce((total, row) => total + Number(row.bytes), 0);
    },
    /** When the oldest of those was stored (null when none): read only when an upload is refused. */
    async oldestVisitorUploadSince(teamId: string, since: Date): Promise<Date | null> {
      // A sort and limit rather than `$min` in `$group`, which FerretDB 1.24 does not implement.
      const found = await Promise.all(
        visitorSources(teamId, since).map(async ({ collection, match, time }) => {
          const [doc] = await collection.find(match, { projection: { [time]: 1 } }).sort({ [time]: 1 }).limit(1).toArray();
          return doc?.[time] instanceof Date ? (doc[time] as Date) : null;
        }),
      );
      return found.reduce<Date | null>((min, at) => (at && (!min || at < min) ? at : min), null);
    },
    /**
     * Expired images count as absent (FerretDB has no TTL index; a cleanup also removes them).
     * The process clock: the datasets module has no injected one.
     */
    async findImage(id: string): Promise<{ binary: Buffer; mime: string } | null> {
      const doc = await images.findOne({ _id: oid(id) });
      if (!doc || expired(doc.expiredTime, Date.now())) return null;
      const binary = Buffer.isBuffer(doc.binary) ? doc.binary : Buffer.from((doc.binary as unknown as { buffer: Uint8Array }).buffer);
      return { binary, mime: doc.metadata.mime };
    },
    async deleteImagesRelated(teamId: string, relatedIds: string[]) {
      if (relatedIds.length === 0) return;
      await images.deleteMany({ teamId: oid(teamId), 'metadata.relatedId': { $in: relatedIds } });
    },
    async deleteExpiredImages(now = new Date()) {
      await images.deleteMany({ expiredTime: { $lt: now } });
    },
  };
}

export type FileRepo = ReturnType<typeof createFileRepo>;
