import { Readable } from 'node:stream';
import { GridFSBucket, type Db, type ObjectId } from 'mongodb';
import type { IndexDeclaration } from '../../../infra/mongo.js';
import { oid } from '../../../infra/plain-record.js';

export const BUCKET_NAMES = ['dataset', 'chat'] as const;
export type BucketName = (typeof BUCKET_NAMES)[number];

export interface StoredFile {
  _id: string;
  length: number;
  chunkSize: number;
  uploadDate: Date;
  filename: string;
  contentType: string;
  metadata: { teamId: string; tmbId: string; encoding?: string; [key: string]: unknown };
}

interface ImageDoc {
  _id: ObjectId;
  teamId: ObjectId;
  createTime: Date;
  expiredTime?: Date;
  binary: Buffer;
  type: string;
  metadata: { mime: string; relatedId?: string };
}

export const FILE_INDEXES: IndexDeclaration[] = [
  { collection: 'dataset.files', key: { uploadDate: -1 } },
  { collection: 'images', key: { teamId: 1, 'metadata.relatedId': 1 } },
];

/** The only code touching GridFS buckets and the `images` collection. */
export function createFileRepo(db: Db) {
  const bucket = (name: BucketName) => new GridFSBucket(db, { bucketName: name });
  const images = db.collection<ImageDoc>('images');
  return {
    async upload(bucketName: BucketName, input: { buffer: Buffer; filename: string; contentType: string; metadata: StoredFile['metadata'] }): Promise<string> {
      const stream = bucket(bucketName).openUploadStream(input.filename, { metadata: { ...input.metadata, contentType: input.contentType } });
      await new Promise<void>((resolve, reject) => {
        Readable.from([input.buffer]).pipe(stream).on('finish', () => resolve()).on('error', reject);
      });
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
    openStream(bucketName: BucketName, id: string) {
      return bucket(bucketName).openDownloadStream(oid(id));
    },
    async readBuffer(bucketName: BucketName, id: string): Promise<Buffer> {
      const parts: Buffer[] = [];
      for await (const part of bucket(bucketName).openDownloadStream(oid(id))) parts.push(part as Buffer);
      return Buffer.concat(parts);
    },
    /** Deletes the team's files among `ids` (a file of another team with one of these ids stays). */
    async deleteMany(bucketName: BucketName, teamId: string, ids: string[]) {
      if (ids.length === 0) return;
      const owned = await bucket(bucketName)
        .find({ _id: { $in: ids.map(oid) }, 'metadata.teamId': teamId }, { projection: { _id: 1 } })
        .toArray();
      for (const file of owned) {
        await bucket(bucketName)
          .delete(file._id)
          .catch(() => undefined);
      }
    },
    async insertImage(input: { teamId: string; binary: Buffer; mime: string; type: string; relatedId?: string; expiredTime?: Date }): Promise<string> {
      const { insertedId } = await images.insertOne({
        teamId: oid(input.teamId),
        createTime: new Date(),
        expiredTime: input.expiredTime,
        binary: input.binary,
        type: input.type,
        metadata: { mime: input.mime, relatedId: input.relatedId },
      } as ImageDoc);
      return insertedId.toHexString();
    },
    /** Expired images count as absent (FerretDB has no TTL index; a cleanup also removes them). */
    async findImage(id: string): Promise<{ binary: Buffer; mime: string } | null> {
      const doc = await images.findOne({ _id: oid(id) });
      if (!doc || (doc.expiredTime && doc.expiredTime.getTime() < Date.now())) return null;
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
