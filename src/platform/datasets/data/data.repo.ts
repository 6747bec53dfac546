import type { Db, ObjectId } from 'mongodb';
import { deleteEach, escapeRegex, findWithAnyOf, type IndexDeclaration, insertManyNew } from '../../../infra/mongo.js';
import { oid, oids, type Plain, plain } from '../../../infra/plain-record.js';
import { groupBy } from '../../../domain/group-by.js';
import { findPage } from '../../../infra/find-page.js';
import { bumpAfterWrite } from '../../../infra/version-stamps.js';
import type { DataListChange } from './data-changes.repo.js';
import type { ListedData } from './data-list.read-model.js';

export interface DataIndex {
  defaultIndex: boolean;
  /** Id of the vector row (in `dataset_vectors`) embedding this text. */
  dataId: string;
  text: string;
}

interface DataDoc {
  _id: ObjectId;
  teamId: ObjectId;
  tmbId: ObjectId;
  datasetId: ObjectId;
  collectionId: ObjectId;
  q: string;
  a: string;
  chunkIndex: number;
  indexes: DataIndex[];
  /** Search tokens of q and a (the in-process full-text index is built from them; FerretDB has no `$text`). */
  fullTextTokens: string[];
  updateTime: Date;
  /**
   * Moves with every write of q, a or indexes (missing until the first): a writer names the one
   * it planned from, and a write in between makes it plan again (no transactions on FerretDB).
   */
  version?: number;
  rebuilding?: boolean;
}

export type DataRecord = Plain<DataDoc>;

export const DATA_INDEXES: IndexDeclaration[] = [
  // A collection's data list in its order: chunk index, newest first, then `_id`.
  { collection: 'dataset_datas', key: { teamId: 1, datasetId: 1, collectionId: 1, chunkIndex: 1, updateTime: -1, _id: 1 } },
  { collection: 'dataset_datas', key: { rebuilding: 1, teamId: 1, datasetId: 1 } },
  // streamDataset (a search index built from its items) reads by dataset alone: without it MongoDB
  // scans every team's items (FerretDB's test indexes hid it), as vectors have { datasetId, model }.
  { collection: 'dataset_datas', key: { datasetId: 1 } },
  // The export (exportCursor): a team's datasets in `_id` order. MongoDB merges one ordered read
  // per dataset (up to 200 datasets) where it otherwise sorted every item of them, or walked the
  // whole collection in `_id` order.
  { collection: 'dataset_datas', key: { teamId: 1, datasetId: 1, _id: 1 } },
];
/** Indexes of earlier versions the ones above replace (a prefix of one of them): none reads them. */
export const RETIRED_DATA_INDEXES: IndexDeclaration[] = [
  { collection: 'dataset_datas', key: { teamId: 1, datasetId: 1, collectionId: 1, chunkIndex: 1, updateTime: -1 } },
];

/** What the search index is built from: no indexes, owner or time. */
export type IndexedRow = Omit<DataRecord, 'indexes' | 'teamId' | 'tmbId' | 'updateTime'>;
const INDEX_FIELDS = { q: 1, a: 1, datasetId: 1, collectionId: 1, chunkIndex: 1, fullTextTokens: 1 } as const;

export interface NewData {
  _id: string;
  teamId: string;
  tmbId: string;
  datasetId: string;
  collectionId: string;
  q: string;
  a: string;
  chunkIndex: number;
  indexes: DataIndex[];
  fullTextTokens: string[];
}

/** A collection named with its team and dataset (every list read is scoped by all three). */
export interface CollectionOwner {
  teamId: string;
  datasetId: string;
  collectionId: string;
}

/** An item named with its collection: writes tell the collection's data list they changed it. */
export interface DataRef {
  _id: string;
  collectionId: string;
}

/** An item as a writer read it: its writes apply only while the item still has that version. */
export interface ReadDataRef extends DataRef {
  version?: number;
}

/**
 * The only code touching `dataset_datas`. `listChanged` tells the data lists of the touched
 * collections (data-list.read-model.ts) which items changed; every write that changes what a
 * list shows or its order calls it, after the write and after a failed one.
 */
export function createDataRepo(db: Db, listChanged: (changes: DataListChange[]) => Promise<void>) {
  const col = db.collection<DataDoc>('dataset_datas');
  const changing = <T>(changes: DataListChange[], write: () => Promise<T>) => bumpAfterWrite(write, () => listChanged(changes));
  /** The items written, as the changes of their collections. */
  const byCollection = (items: { teamId: string; _id: string; collectionId: string }[]): DataListChange[] =>
    [...groupBy(items, (item) => `${item.teamId} ${item.collectionId}`).values()].map((group) => ({
      teamId: group[0]!.teamId,
      collectionId: group[0]!.collectionId,
      ids: group.map((item) => item._id),
    }));
  /** Writes `set` (and a new updateTime and version) only while the item still has the version it was read at. */
  const setAtVersion = async (teamId: string, item: ReadDataRef, set: Partial<DataDoc>): Promise<boolean> => {
    const filter = { _id: oid(item._id), teamId: oid(teamId), version: item.version ?? { $exists: false } };
    const result = await changing(byCollection([{ ...item, teamId }]), () => col.updateOne(filter, { $set: { ...set, updateTime: new Date() }, $inc: { version: 1 } }));
    return result.matchedCount > 0;
  };
  const scope = (teamId: string, datasetIds: string[]) => ({ teamId: oid(teamId), datasetId: { $in: oids(datasetIds) } });
  const ofCollection = (owner: CollectionOwner) => ({ teamId: oid(owner.teamId), datasetId: oid(owner.datasetId), collectionId: oid(owner.collectionId) });
  const LIST_FIELDS = { q: 1, a: 1, chunkIndex: 1, updateTime: 1 } as const;
  const listed = (doc: Pick<DataDoc, '_id' | 'q' | 'a' | 'chunkIndex' | 'updateTime'>): ListedData => ({
    _id: doc._id.toHexString(),
    q: doc.q,
    a: doc.a,
    chunkIndex: doc.chunkIndex,
    updatedAt: doc.updateTime.getTime(),
  });
  return {
    /** Inserts new items; ids that exist already are left alone (idempotent retries, cheap on FerretDB). */
    async insertNew(inputs: NewData[]): Promise<void> {
      if (inputs.length === 0) return;
      const now = new Date();
      const docs = inputs.map((input) => ({
        ...input,
        _id: oid(input._id),
        teamId: oid(input.teamId),
        tmbId: oid(input.tmbId),
        datasetId: oid(input.datasetId),
        collectionId: oid(input.collectionId),
        updateTime: now,
      }));
      await changing(byCollection(inputs), () => insertManyNew(col, docs));
    },
    async findById(teamId: string, id: string): Promise<DataRecord | null> {
      const doc = await col.findOne({ _id: oid(id), teamId: oid(teamId) });
      return doc ? plain(doc) : null;
    },
    /** For authorisation only: the caller's permission on the owning dataset decides. */
    async findForAuth(id: string): Promise<DataRecord | null> {
      const doc = await col.findOne({ _id: oid(id) });
      return doc ? plain(doc) : null;
    },
    /** A page of a collection's data list, sorted and counted by the database. */
    async list(owner: CollectionOwner, searchText: string | undefined, page: { skip: number; limit: number }) {
      const query: Record<string, unknown> = ofCollection(owner);
      if (searchText?.trim()) {
        const regex = new RegExp(escapeRegex(searchText), 'i');
        query.$or = [{ q: regex }, { a: regex }];
      }
      const { docs, total } = await findPage(col, query, { chunkIndex: 1, updateTime: -1, _id: 1 }, page);
      return { items: docs.map((doc) => plain(doc)), total };
    },
    /** At most `limit` items of a collection, in no order, with what its data list shows and sorts by. */
    async listRows(owner: CollectionOwner, limit: number): Promise<ListedData[]> {
      const docs = await col.find(ofCollection(owner), { projection: LIST_FIELDS }).limit(limit).toArray();
      return docs.map(listed);
    },
    /**
     * The list rows of those of `ids` still in the collection: read by `_id` and team each (for a
     * few), the dataset and collection checked here. With them in the filter too, PostgreSQL
     * under FerretDB chose the index on team and dataset and rechecked all their items (120 ms
     * for one of 20,000 where `_id` and team take 5 ms); MongoDB reads by `_id` either way.
     */
    async listRowsByIds(owner: CollectionOwner, ids: string[]): Promise<ListedData[]> {
      const docs = await findWithAnyOf(col, { teamId: oid(owner.teamId) }, '_id', oids(ids), { ...LIST_FIELDS, datasetId: 1, collectionId: 1 });
      return docs.filter((doc) => doc.datasetId.toHexString() === owner.datasetId && doc.collectionId.toHexString() === owner.collectionId).map(listed);
    },
    async sameExists(teamId: string, collectionId: string, q: string, a: string): Promise<boolean> {
      return (await col.countDocuments({ teamId: oid(teamId), collectionId: oid(collectionId), q, a }, { limit: 1 })) > 0;
    },
    /** False when the item changed since `item` was read, or is gone: nothing was written then. */
    update: (teamId: string, item: ReadDataRef, set: { q: string; a: string; indexes: DataIndex[]; fullTextTokens: string[] }): Promise<boolean> =>
      setAtVersion(teamId, item, set),
    /** As `update`, for the indexes alone. Also moves the item's `updateTime`, the list's second sort key. */
    setIndexes: (teamId: string, item: ReadDataRef, indexes: DataIndex[]): Promise<boolean> => setAtVersion(teamId, item, { indexes }),
    async deleteById(teamId: string, item: DataRef) {
      await changing(byCollection([{ ...item, teamId }]), () => col.deleteOne({ _id: oid(item._id), teamId: oid(teamId) }));
    },
    async deleteByCollections(teamId: string, collectionIds: string[]) {
      if (collectionIds.length === 0) return;
      const changes = [...new Set(collectionIds)].map((collectionId) => ({ teamId, collectionId, ids: null }));
      await changing(changes, () => deleteEach(col, oids(collectionIds).map((collectionId) => ({ teamId: oid(teamId), collectionId }))));
    },
    /**
     * Bumps no list: the datasets are deleted before their content (cascade.ts), and every data
     * list authorises through its dataset first.
     */
    async deleteByDatasets(teamId: string, datasetIds: string[]) {
      await deleteEach(col, oids(datasetIds).map((datasetId) => ({ teamId: oid(teamId), datasetId })));
    },
    /** Those of `ids` still in the dataset, with what its search index holds of them and their vector ids (an index write's repair). */
    async findForIndex(teamId: string, datasetId: string, ids: string[]): Promise<(IndexedRow & Pick<DataRecord, 'indexes'>)[]> {
      const docs = await findWithAnyOf(col, { teamId: oid(teamId) }, '_id', oids(ids), { ...INDEX_FIELDS, indexes: 1 });
      return docs.filter((doc) => doc.datasetId.toHexString() === datasetId).map((doc) => plain(doc));
    },
    /** Streams a dataset's items (no indexes) to build the in-process search index. */
    async *streamDataset(datasetId: string): AsyncGenerator<IndexedRow> {
      const cursor = col.find({ datasetId: oid(datasetId) }, { projection: INDEX_FIELDS }).batchSize(2000);
      for await (const doc of cursor) yield plain(doc);
    },
    /** A cursor over q/a for export; never loads the dataset into memory. */
    exportCursor(teamId: string, datasetIds: string[], limit: number) {
      return col.find(scope(teamId, datasetIds), { projection: { q: 1, a: 1 } }).sort({ _id: 1 }).limit(limit);
    },
    /** Bumps no list: the flag is not shown. */
    async markRebuilding(teamId: string, datasetId: string) {
      await col.updateMany({ teamId: oid(teamId), datasetId: oid(datasetId) }, { $set: { rebuilding: true } });
    },
    /** One data item still flagged for the dataset's rebuild (queued or not yet). */
    async nextRebuilding(teamId: string, datasetId: string): Promise<DataRecord | null> {
      const doc = await col.findOne({ teamId: oid(teamId), datasetId: oid(datasetId), rebuilding: true });
      return doc ? plain(doc) : null;
    },
    /** Unflags an item whose rebuild is queued. Its new `updateTime` moves it in the list, so its collection's list is bumped. */
    async clearRebuilding(teamId: string, item: DataRef) {
      await changing(byCollection([{ ...item, teamId }]), () =>
        col.updateOne({ _id: oid(item._id), teamId: oid(teamId), rebuilding: true }, { $unset: { rebuilding: '' }, $set: { updateTime: new Date() } }),
      );
    },
    async countRebuilding(teamId: string, datasetId: string): Promise<number> {
      return col.countDocuments({ teamId: oid(teamId), datasetId: oid(datasetId), rebuilding: true });
    },
  };
}

export type DataRepo = ReturnType<typeof createDataRepo>;
