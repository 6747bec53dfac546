import { type Db, ObjectId } from 'mongodb';
import { deleteEach } from '../../../infra/mongo.js';
import { oid } from '../../../infra/plain-record.js';
import type { CountBase, CountDelta, CountDoc, CountEntry } from './training-counts-fold.js';

/** The count documents of the training queue (training-counts.ts): one base and the deltas of each dataset. */
export const TRAINING_COUNTS_COLLECTION = 'dataset_training_counts';

interface BaseDoc {
  /** `base:<datasetId>` */
  _id: string;
  teamId: ObjectId;
  datasetId: ObjectId;
  counts: CountEntry[];
  folded: ObjectId[];
  changedAt: Date;
  checkedAt: Date;
}
interface DeltaDoc {
  _id: ObjectId;
  teamId: ObjectId;
  datasetId: ObjectId;
  counts: CountEntry[];
  at: Date;
}
type StoredDoc = BaseDoc | DeltaDoc;

export const TRAINING_COUNT_INDEXES = [{ collection: TRAINING_COUNTS_COLLECTION, key: { teamId: 1, datasetId: 1 } }];

/** A base has the dataset's name as its id; a delta an ObjectId. */
function toRecord(doc: StoredDoc): CountDoc {
  const owner = { teamId: doc.teamId.toHexString(), datasetId: doc.datasetId.toHexString(), counts: doc.counts };
  if (typeof doc._id === 'string') {
    const base = doc as BaseDoc;
    return { kind: 'base', ...owner, folded: base.folded.map((id) => id.toHexString()), changedAt: base.changedAt, checkedAt: base.checkedAt };
  }
  return { kind: 'delta', id: doc._id.toHexString(), ...owner, at: (doc as DeltaDoc).at };
}

export function createTrainingCountsRepo(db: Db) {
  const col = db.collection<StoredDoc>(TRAINING_COUNTS_COLLECTION);
  // The union of id types reads as one `WithId`: each document is one or the other.
  const records = (docs: unknown[]) => (docs as StoredDoc[]).map(toRecord);

  return {
    async ofDataset(teamId: string, datasetId: string): Promise<CountDoc[]> {
      return records(await col.find({ teamId: oid(teamId), datasetId: oid(datasetId) }).toArray());
    },
    /** Every dataset's documents (a few small ones each). */
    async all(): Promise<CountDoc[]> {
      return records(await col.find({}).toArray());
    },
    async writeBase(base: Omit<CountBase, 'kind'>): Promise<void> {
      const { teamId, datasetId, counts, folded, changedAt, checkedAt } = base;
      const doc: BaseDoc = { _id: `base:${datasetId}`, teamId: oid(teamId), datasetId: oid(datasetId), counts, folded: folded.map(oid), changedAt, checkedAt };
      await col.replaceOne({ _id: doc._id }, doc, { upsert: true });
    },
    async deleteDeltas(teamId: string, datasetId: string, ids: string[]): Promise<void> {
      if (ids.length > 0) await col.deleteMany({ teamId: oid(teamId), datasetId: oid(datasetId), _id: { $in: ids.map(oid) } });
    },
    /** New delta documents, in one insert. */
    async insertDeltas(deltas: Omit<CountDelta, 'kind' | 'id'>[]): Promise<void> {
      await col.insertMany(
        deltas.map(({ teamId, datasetId, counts, at }) => ({ _id: new ObjectId(), teamId: oid(teamId), datasetId: oid(datasetId), counts, at })),
      );
    },
    async dropDatasets(teamId: string, datasetIds: string[]): Promise<void> {
      await deleteEach(col, datasetIds.map((datasetId) => ({ teamId: oid(teamId), datasetId: oid(datasetId) })));
    },
  };
}

export type TrainingCountsRepo = ReturnType<typeof createTrainingCountsRepo>;
