import { Binary, type Db, type ObjectId } from 'mongodb';
import { deleteEach, findWithAnyOf, type IndexDeclaration, insertManyNew } from '../../../infra/mongo.js';
import { oid, oids } from '../../../infra/plain-record.js';

/** One embedded index text. `_id` is the index's `dataId`, so retried writes replace, never duplicate. */
interface VectorDoc {
  _id: string;
  teamId: ObjectId;
  datasetId: ObjectId;
  collectionId: ObjectId;
  /** The data item (`dataset_datas._id`) owning the index. */
  dataId: ObjectId;
  model: string;
  /** Float32 little-endian: ~4× smaller than a number array and far cheaper to read back. */
  vector: Binary;
}

export interface VectorRow {
  id: string;
  teamId: string;
  datasetId: string;
  collectionId: string;
  dataId: string;
  model: string;
  vector: number[];
}

export const VECTOR_INDEXES: IndexDeclaration[] = [
  { collection: 'dataset_vectors', key: { teamId: 1, datasetId: 1, collectionId: 1 } },
  { collection: 'dataset_vectors', key: { datasetId: 1, model: 1 } },
];

const encodeVector = (vector: number[]) => new Binary(Buffer.from(Float32Array.from(vector).buffer));

function decodeVector(value: Binary | number[]): number[] {
  if (Array.isArray(value)) return value;
  const bytes = value.buffer;
  const floats = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  return Array.from(floats);
}

const toRow = (doc: VectorDoc): VectorRow => ({
  id: doc._id,
  teamId: doc.teamId.toHexString(),
  datasetId: doc.datasetId.toHexString(),
  collectionId: doc.collectionId.toHexString(),
  dataId: doc.dataId.toHexString(),
  model: doc.model,
  vector: decodeVector(doc.vector),
});

/**
 * The only code touching `dataset_vectors` (our vector store lives in MongoDB). `counted` hears
 * how many vectors each write stored or deleted for a team (the plan's dataset size counter).
 */
export function createVectorRepo(db: Db, counted: (teamId: string, delta: number) => Promise<void> = async () => undefined) {
  const col = db.collection<VectorDoc>('dataset_vectors');
  const deleted = async (teamId: string, removal: Promise<number>) => counted(teamId, -(await removal));
  return {
    /** Inserts new rows; rows whose id exists already are left as they are (a retried training item writes the same ids). */
    async insertNew(rows: VectorRow[]): Promise<void> {
      const teamId = rows[0]?.teamId;
      if (!teamId) return;
      if (rows.some((row) => row.teamId !== teamId)) throw new Error('vectors of one write belong to one team');
      const inserted = await insertManyNew(
        col,
        rows.map((row) => ({
          _id: row.id,
          teamId: oid(row.teamId),
          datasetId: oid(row.datasetId),
          collectionId: oid(row.collectionId),
          dataId: oid(row.dataId),
          model: row.model,
          vector: encodeVector(row.vector),
        })),
      );
      await counted(teamId, inserted);
    },
    async deleteByIds(teamId: string, ids: string[]) {
      if (ids.length === 0) return;
      await deleted(teamId, deleteEach(col, ids.map((id) => ({ _id: id, teamId: oid(teamId) }))));
    },
    async deleteByCollections(teamId: string, collectionIds: string[]) {
      await deleted(teamId, deleteEach(col, oids(collectionIds).map((collectionId) => ({ teamId: oid(teamId), collectionId }))));
    },
    async deleteByDatasets(teamId: string, datasetIds: string[]) {
      await deleted(teamId, deleteEach(col, oids(datasetIds).map((datasetId) => ({ teamId: oid(teamId), datasetId }))));
    },
    /** Those of `ids` the team still has (an index write's repair). */
    async findByIds(teamId: string, ids: string[]): Promise<VectorRow[]> {
      return (await findWithAnyOf(col, { teamId: oid(teamId) }, '_id', ids)).map(toRow);
    },
    /** Streams the vectors of one dataset and model (index rebuild at start or first search). */
    async *streamDataset(datasetId: string, model: string): AsyncGenerator<VectorRow> {
      for await (const doc of col.find({ datasetId: oid(datasetId), model }).batchSize(2000)) yield toRow(doc);
    },
    /** A scan of the team's vectors on FerretDB: the plan's recount only (its counter is fed by `counted`). */
    async countByTeam(teamId: string): Promise<number> {
      return col.countDocuments({ teamId: oid(teamId) });
    },
  };
}

export type VectorRepo = ReturnType<typeof createVectorRepo>;
