import { Binary, type Db } from 'mongodb';
import { type IndexDeclaration, isDuplicateKeyError } from '../../../infra/mongo.js';
import type { SnapshotPart, StoredChange } from './index-codec.js';

/** Where a dataset's stored index stands: its snapshot, the change it ends with, who is writing the next. */
export interface IndexMeta {
  /** Id of the current snapshot; null until the first one is written. */
  snapshot: string | null;
  seq: number;
  model: string;
  parts: number;
}

interface MetaDoc extends IndexMeta {
  _id: string;
  at: Date;
  /** A process writing a new snapshot holds this until then (one writer per dataset at a time). */
  claimUntil?: Date;
}

/**
 * One part of a snapshot, its bytes as BSON Binary; `at` is when its writer claimed the right to
 * write it (absent on parts written before it was stored: treated as old).
 */
type SegmentDoc = { _id: string; datasetId: string; snapshot: string; part: number; at?: Date } & Omit<SnapshotPart, 'data'> & { data: Binary };

/** Changes are numbered per dataset; `_id` = `<datasetId>:<seq>` makes a number usable once. */
interface ChangeDoc {
  _id: string;
  datasetId: string;
  seq: number;
  at: Date;
  /** Dropped once a snapshot holds them (the number stays taken until the document goes). */
  changes?: StoredChange[];
}

export interface StoredChangeRecord {
  seq: number;
  /** Undefined when the change is folded into a snapshot and only its number is left. */
  changes?: StoredChange[];
}

export const INDEX_STORE_INDEXES: IndexDeclaration[] = [
  { collection: 'dataset_index_segments', key: { snapshot: 1, part: 1 } },
  { collection: 'dataset_index_segments', key: { datasetId: 1 } },
  { collection: 'dataset_index_changes', key: { datasetId: 1, seq: 1 } },
];

const bytesOf = (value: Binary | Uint8Array): Uint8Array => (value instanceof Binary ? value.buffer : value);

/** Binary fields of a stored change come back as BSON Binary; the codec wants bytes. */
function readChange(change: StoredChange): StoredChange {
  return change.kind === 'putVectors' ? { ...change, data: bytesOf(change.data as unknown as Binary) } : change;
}

/** The only code touching the stored search indexes (`dataset_index_meta`, `_segments`, `_changes`). */
export function createIndexStore(db: Db) {
  const meta = db.collection<MetaDoc>('dataset_index_meta');
  const segments = db.collection<SegmentDoc>('dataset_index_segments');
  const changes = db.collection<ChangeDoc>('dataset_index_changes');

  return {
    async meta(datasetId: string): Promise<IndexMeta | null> {
      const doc = await meta.findOne({ _id: datasetId }, { projection: { claimUntil: 0 } });
      return doc ? { snapshot: doc.snapshot, seq: doc.seq, model: doc.model, parts: doc.parts } : null;
    },

    /** The highest change number ever taken for the dataset (changes first: a snapshot may fold them meanwhile). */
    async head(datasetId: string): Promise<number> {
      const numbers = await changes.find({ datasetId }, { projection: { seq: 1 } }).toArray();
      const stored = await meta.findOne({ _id: datasetId }, { projection: { seq: 1 } });
      return Math.max(stored?.seq ?? 0, ...numbers.map((doc) => doc.seq));
    },

    /** Appends change number `seq`; false when the number is taken. */
    async tryAppend(datasetId: string, seq: number, stored: StoredChange[], at: Date): Promise<boolean> {
      try {
        await changes.insertOne({ _id: `${datasetId}:${seq}`, datasetId, seq, at, changes: stored });
        return true;
      } catch (error) {
        if (isDuplicateKeyError(error)) return false;
        throw error;
      }
    },

    async changesAfter(datasetId: string, seq: number): Promise<StoredChangeRecord[]> {
      const docs = await changes.find({ datasetId, seq: { $gt: seq } }).toArray();
      return docs.sort((x, y) => x.seq - y.seq).map((doc) => ({ seq: doc.seq, changes: doc.changes?.map(readChange) }));
    },

    async parts(snapshot: string): Promise<SnapshotPart[]> {
      const docs = await segments.find({ snapshot }).toArray();
      return docs.sort((x, y) => x.part - y.part).map(({ _id, datasetId: _dataset, snapshot: _snapshot, part: _part, at: _at, data, ...content }) => ({ ...content, data: bytesOf(data) }) as SnapshotPart);
    },

    /** How many parts of the snapshot are stored (without reading them). */
    async partCount(snapshot: string): Promise<number> {
      return segments.countDocuments({ snapshot });
    },

    /**
     * Takes the right to write the next snapshot for a few minutes; returns the meta it starts
     * from, or null when another process holds it.
     */
    async claim(datasetId: string, model: string, now: Date, until: Date): Promise<IndexMeta | null> {
      const taken = await meta.findOneAndUpdate(
        { _id: datasetId, $or: [{ claimUntil: { $exists: false } }, { claimUntil: { $lt: now } }] },
        { $set: { claimUntil: until } },
        { returnDocument: 'before' },
      );
      if (taken) return { snapshot: taken.snapshot, seq: taken.seq, model: taken.model, parts: taken.parts };
      try {
        await meta.insertOne({ _id: datasetId, snapshot: null, seq: 0, model, parts: 0, at: now, claimUntil: until });
        return { snapshot: null, seq: 0, model, parts: 0 };
      } catch (error) {
        if (isDuplicateKeyError(error)) return null;
        throw error;
      }
    },

    /** `at`: when the writer took its claim (what tells a crashed writer's parts from a live one's). */
    async writeParts(datasetId: string, snapshot: string, parts: SnapshotPart[], at = new Date()): Promise<void> {
      // One part per insert: each is several megabytes already.
      for (const [part, content] of parts.entries()) {
        await segments.insertOne({ _id: `${snapshot}:${part}`, datasetId, snapshot, part, at, ...content, data: new Binary(content.data) } as SegmentDoc);
      }
    },

    /** Makes `next` the current snapshot if the meta is still `previous`; releases the claim either way. */
    async publish(datasetId: string, previous: IndexMeta, next: IndexMeta, at: Date): Promise<boolean> {
      const result = await meta.updateOne(
        { _id: datasetId, snapshot: previous.snapshot, seq: previous.seq },
        { $set: { ...next, at }, $unset: { claimUntil: '' } },
      );
      if (result.modifiedCount === 1) return true;
      await meta.updateOne({ _id: datasetId }, { $unset: { claimUntil: '' } });
      return false;
    },

    async release(datasetId: string): Promise<void> {
      await meta.updateOne({ _id: datasetId }, { $unset: { claimUntil: '' } });
    },

    async deleteSnapshot(snapshot: string): Promise<void> {
      await segments.deleteMany({ snapshot });
    },

    /**
     * Parts a crashed or stalled writer left: of the dataset's snapshots other than `keep`, those
     * whose writer claimed before `before` (its claim long lapsed). Never a live writer's parts.
     */
    async deleteAbandonedSnapshots(datasetId: string, keep: string[], before: Date): Promise<void> {
      await segments.deleteMany({ datasetId, snapshot: { $nin: keep }, $or: [{ at: { $lt: before } }, { at: { $exists: false } }] });
    },

    /**
     * After a snapshot up to `seq`: the folded changes lose their content at once (a reader
     * behind them opens the snapshot instead), and go entirely once older than `before`.
     */
    async foldChanges(datasetId: string, seq: number, before: Date): Promise<void> {
      await changes.updateMany({ datasetId, seq: { $lte: seq }, changes: { $exists: true } }, { $unset: { changes: '' } });
      await changes.deleteMany({ datasetId, seq: { $lte: seq }, at: { $lt: before } });
    },

    async dropDataset(datasetId: string): Promise<void> {
      await changes.deleteMany({ datasetId });
      await segments.deleteMany({ datasetId });
      await meta.deleteOne({ _id: datasetId });
    },
  };
}

export type IndexStore = ReturnType<typeof createIndexStore>;
