import { type Db, ObjectId } from 'mongodb';
import { existingObjectIds, findWithAnyOf, type IndexDeclaration } from '../../../infra/mongo.js';
import { oid, oids, type Plain, plain } from '../../../infra/plain-record.js';
import { bumpAfterWrite } from '../../../infra/version-stamps.js';

export const DATASET_TYPES = ['folder', 'dataset', 'websiteDataset', 'externalFile'] as const;
export type DatasetType = (typeof DATASET_TYPES)[number];

interface DatasetDoc {
  _id: ObjectId;
  parentId: ObjectId | null;
  teamId: ObjectId;
  tmbId: ObjectId;
  type: DatasetType;
  status: 'active' | 'syncing';
  avatar: string;
  name: string;
  intro: string;
  updateTime: Date;
  vectorModel: string;
  agentModel: string;
  websiteConfig?: { url: string; selector: string };
  externalReadUrl?: string;
  defaultPermission: number;
  inheritPermission: boolean;
}

export type DatasetRecord = Plain<DatasetDoc>;

export const DATASET_INDEXES: IndexDeclaration[] = [
  { collection: 'datasets', key: { teamId: 1, parentId: 1, updateTime: -1 } },
  { collection: 'datasets', key: { teamId: 1, type: 1 } },
];

/**
 * A dataset delete in progress: written before anything is deleted, removed when everything is
 * (cascade.ts); what is left after a crash is finished by the next start or the periodic sweep.
 */
interface DatasetDeletionDoc {
  _id: ObjectId;
  teamId: ObjectId;
  /** The deleted dataset first, then its descendants. */
  datasetIds: ObjectId[];
  createTime: Date;
}

export type DatasetDeletion = Plain<DatasetDeletionDoc>;

export interface NewDataset {
  /** Chosen before the insert: a folder's permission rows are written first, under this id. */
  _id: string;
  parentId: string | null;
  teamId: string;
  tmbId: string;
  type: DatasetType;
  name: string;
  intro: string;
  avatar: string;
  vectorModel: string;
  agentModel: string;
  defaultPermission: number;
}

export type DatasetPatch = Partial<
  Pick<DatasetRecord, 'name' | 'avatar' | 'intro' | 'agentModel' | 'status' | 'websiteConfig' | 'externalReadUrl' | 'vectorModel' | 'defaultPermission' | 'inheritPermission' | 'parentId'>
>;

/** The fields the dataset lists show and order by (the read model keeps whole documents). */
export type ListedDataset = Pick<
  DatasetRecord,
  '_id' | 'parentId' | 'teamId' | 'tmbId' | 'type' | 'avatar' | 'name' | 'intro' | 'updateTime' | 'vectorModel' | 'defaultPermission' | 'inheritPermission'
>;

/**
 * The only code touching the `datasets` collection. `onListChanged(teamId)` runs after every
 * write of a dataset document: the version stamp of the team's read model, which the dataset
 * lists and dataset authorisation answer from.
 */
export function createDatasetRepo(db: Db, onListChanged: (teamId: string) => Promise<void> = async () => undefined) {
  /** Runs a write, then tells the read model, whether the write went through or not. */
  function changing<T>(teamId: string, write: () => Promise<T>): Promise<T> {
    return bumpAfterWrite(write, () => onListChanged(teamId));
  }
  const col = db.collection<DatasetDoc>('datasets');
  const deletions = db.collection<DatasetDeletionDoc>('dataset_deletions');
  return {
    async insert(input: NewDataset): Promise<string> {
      return changing(input.teamId, async () => {
        const { insertedId } = await col.insertOne({
          ...input,
          _id: oid(input._id),
          parentId: input.parentId ? oid(input.parentId) : null,
          teamId: oid(input.teamId),
          tmbId: oid(input.tmbId),
          status: 'active',
          updateTime: new Date(),
          inheritPermission: true,
        } as DatasetDoc);
        return insertedId.toHexString();
      });
    },
    async findById(teamId: string, id: string): Promise<DatasetRecord | null> {
      const doc = await col.findOne({ _id: oid(id), teamId: oid(teamId) });
      return doc ? plain(doc) : null;
    },
    /** The dataset's vector model as stored now (not as a cached read model has it), or null when it is gone. */
    async vectorModelOf(teamId: string, id: string): Promise<string | null> {
      const doc = await col.findOne({ _id: oid(id), teamId: oid(teamId) }, { projection: { vectorModel: 1 } });
      return doc?.vectorModel ?? null;
    },
    /**
     * Every dataset of the team, whole: the team read model's load. Lists filter and sort it in
     * memory, and dataset authorisation answers the same document `findById` would (documents
     * are small: names, models, a few settings).
     */
    async listTeam(teamId: string): Promise<DatasetRecord[]> {
      const docs = await col.find({ teamId: oid(teamId) }).toArray();
      return docs.map((doc) => plain(doc));
    },
    /**
     * Every searchable dataset of every team with its vector model: the process-level search
     * index warm-up at start is the one reader that is not acting for a team.
     */
    async *streamSearchable(): AsyncGenerator<{ id: string; vectorModel: string }> {
      const cursor = col.find({ type: { $ne: 'folder' } }, { projection: { vectorModel: 1 } }).batchSize(500);
      for await (const doc of cursor) yield { id: doc._id.toHexString(), vectorModel: doc.vectorModel };
    },
    async countNonFolder(teamId: string): Promise<number> {
      return col.countDocuments({ teamId: oid(teamId), type: { $ne: 'folder' } });
    },
    async update(teamId: string, id: string, patch: DatasetPatch): Promise<void> {
      const set: Record<string, unknown> = { ...patch };
      if (patch.parentId !== undefined) set.parentId = patch.parentId ? oid(patch.parentId) : null;
      if (Object.keys(set).length === 0) return;
      await changing(teamId, () => col.updateOne({ _id: oid(id), teamId: oid(teamId) }, { $set: set }));
    },
    /** Which of the ids still name a dataset, whatever its team (the training worker's check). */
    existingIds: (ids: string[]): Promise<Set<string>> => existingObjectIds(col, ids),
    /**
     * Deletes the datasets with one command, so the subtree goes in one step; returns how many
     * non-folder datasets went (the plan counts those). Callers hold the team's tree lock, so
     * nothing else deletes them between the count and the delete.
     */
    async deleteMany(teamId: string, ids: string[]): Promise<number> {
      const scope = { _id: { $in: oids(ids) }, teamId: oid(teamId) };
      const counted = await col.countDocuments({ ...scope, type: { $ne: 'folder' } });
      const { deletedCount } = await changing(teamId, () => col.deleteMany(scope));
      return deletedCount > 0 ? counted : 0;
    },
    async recordDeletion(teamId: string, datasetIds: string[]): Promise<DatasetDeletion> {
      const doc = { _id: new ObjectId(), teamId: oid(teamId), datasetIds: oids(datasetIds), createTime: new Date() };
      await deletions.insertOne(doc);
      return plain(doc);
    },
    /** Replaces a deletion's datasets (a child was created into its subtree before it took effect). */
    async setDeletionDatasets(id: string, datasetIds: string[]): Promise<void> {
      await deletions.updateOne({ _id: oid(id) }, { $set: { datasetIds: oids(datasetIds) } });
    },
    /** Deletions not finished, oldest first; `createdBefore` leaves out ones still likely running. */
    async unfinishedDeletions(createdBefore?: Date): Promise<DatasetDeletion[]> {
      const docs = await deletions
        .find(createdBefore ? { createTime: { $lt: createdBefore } } : {})
        .sort({ _id: 1 })
        .toArray();
      return docs.map((doc) => plain(doc));
    },
    async finishDeletion(id: string): Promise<void> {
      await deletions.deleteOne({ _id: oid(id) });
    },
    /** The dataset and every descendant (folders included), breadth first. */
    async withDescendants(teamId: string, id: string): Promise<string[]> {
      // A set, not all.includes per child (quadratic in a big folder); a cycle in bad data ends here too.
      const all = new Set([id]);
      let frontier = [id];
      while (frontier.length > 0) {
        const next = await findWithAnyOf(col, { teamId: oid(teamId) }, 'parentId', oids(frontier), { _id: 1 });
        frontier = [];
        for (const doc of next) {
          const child = doc._id.toHexString();
          if (all.has(child)) continue;
          all.add(child);
          frontier.push(child);
        }
      }
      return [...all];
    },
  };
}

export type DatasetRepo = ReturnType<typeof createDatasetRepo>;
