import type { Db, ObjectId } from 'mongodb';
import { deleteEach, encodeMap, escapeRegex, existingObjectIds, findWithAnyOf, type IndexDeclaration } from '../../../infra/mongo.js';
import { oid, oids, type Plain, plain } from '../../../infra/plain-record.js';
import { bumpAfterWrite } from '../../../infra/version-stamps.js';
import { findPage } from '../../../infra/find-page.js';

export const COLLECTION_TYPES = ['folder', 'virtual', 'file', 'link', 'externalFile'] as const;
export type CollectionType = (typeof COLLECTION_TYPES)[number];
export const TRAINING_MODES = ['chunk', 'qa', 'auto'] as const;
export type TrainingMode = (typeof TRAINING_MODES)[number];

interface CollectionDoc {
  _id: ObjectId;
  teamId: ObjectId;
  tmbId: ObjectId;
  datasetId: ObjectId;
  parentId: ObjectId | null;
  type: CollectionType;
  name: string;
  createTime: Date;
  updateTime: Date;
  forbid: boolean;
  trainingType: TrainingMode;
  chunkSize: number;
  chunkSplitter?: string;
  qaPrompt?: string;
  tags: string[];
  fileId?: ObjectId;
  rawLink?: string;
  externalFileId?: string;
  externalFileUrl?: string;
  rawTextLength?: number;
  hashRawText?: string;
  /** User-keyed metadata, stored as {k, v} pairs (FerretDB refuses dotted keys). */
  metadataPairs: { k: string; v: string }[];
  /** An import still running (collection-imports.ts); absent once whole. */
  importing?: ImportingDoc;
}

/**
 * An import's intent, written with the collection (one insert, so no collection is ever without
 * it) and removed after its last queue batch: `until` is the lease its process renews; `queued`
 * once every item is queued (a sync then deletes `replaces`, the collection it replaces).
 */
interface ImportingDoc {
  since: Date;
  until: Date;
  queued: boolean;
  replaces?: ObjectId;
}

/** An import whose lease lapsed: its process died or stopped (see collection-imports.ts). */
export interface LapsedImport {
  _id: string;
  teamId: string;
  datasetId: string;
  fileId?: string;
  queued: boolean;
  replaces?: string;
}

export type CollectionRecord = Omit<Plain<CollectionDoc>, 'metadataPairs' | 'importing'> & { metadata: Record<string, unknown> };

export const COLLECTION_INDEXES: IndexDeclaration[] = [
  // A folder's list: newest first, then `_id`.
  { collection: 'dataset_collections', key: { teamId: 1, datasetId: 1, parentId: 1, updateTime: -1, _id: -1 } },
  { collection: 'dataset_collections', key: { teamId: 1, fileId: 1 } },
  // The import sweep's read of lapsed imports.
  { collection: 'dataset_collections', key: { 'importing.until': 1 } },
];
/** Indexes of earlier versions the ones above replace (a prefix of one of them): none reads them. */
export const RETIRED_COLLECTION_INDEXES: IndexDeclaration[] = [{ collection: 'dataset_collections', key: { teamId: 1, datasetId: 1, parentId: 1, updateTime: -1 } }];

export interface NewCollection {
  teamId: string;
  tmbId: string;
  datasetId: string;
  parentId: string | null;
  type: CollectionType;
  name: string;
  trainingType: TrainingMode;
  chunkSize: number;
  chunkSplitter?: string;
  qaPrompt?: string;
  tags?: string[];
  fileId?: string;
  rawLink?: string;
  externalFileId?: string;
  externalFileUrl?: string;
  rawTextLength?: number;
  hashRawText?: string;
  metadata?: Record<string, unknown>;
  createTime?: Date;
}

export interface CollectionListFilter {
  datasetId: string;
  parentId: string | null;
  searchText?: string;
  selectFolder?: boolean;
  tags?: { ids: string[]; mode: 'in' | 'all' };
}

/** Metadata values are kept as JSON text so any value type survives the {k, v} encoding. */
function encodeMetadata(metadata: Record<string, unknown> | undefined): { k: string; v: string }[] {
  return encodeMap(Object.fromEntries(Object.entries(metadata ?? {}).map(([k, v]) => [k, JSON.stringify(v)])));
}

/**
 * Collections users see: not an import still queueing (a sync's replacement whose items are all
 * queued shows, beside the collection it replaces until that one is deleted).
 */
const WHOLE = { 'importing.queued': { $ne: false } };

function toRecord(doc: CollectionDoc): CollectionRecord {
  const { metadataPairs, importing: _importing, ...rest } = doc;
  const metadata: Record<string, unknown> = {};
  for (const { k, v } of metadataPairs ?? []) {
    try {
      metadata[k] = JSON.parse(v);
    } catch {
      metadata[k] = v;
    }
  }
  return { ...plain(rest), metadata };
}

/**
 * The only code touching `dataset_collections`. `onChanged(teamId)` runs after every update or
 * delete (the collection cache's version stamp); inserts need none (collection-cache.ts).
 */
export function createCollectionRepo(db: Db, onChanged: (teamId: string) => Promise<void> = async () => undefined) {
  /** Runs a write, then tells the cache, whether the write went through or not. */
  function changing<T>(teamId: string, write: () => Promise<T>): Promise<T> {
    return bumpAfterWrite(write, () => onChanged(teamId));
  }
  const col = db.collection<CollectionDoc>('dataset_collections');
  const listQuery = (teamId: string, filter: CollectionListFilter) => {
    // A search looks inside the folder it is typed in (the root without a parentId), as the reference.
    const query: Record<string, unknown> = { teamId: oid(teamId), datasetId: oid(filter.datasetId), parentId: filter.parentId ? oid(filter.parentId) : null, ...WHOLE };
    if (filter.searchText) query.name = { $regex: escapeRegex(filter.searchText), $options: 'i' };
    if (filter.selectFolder) query.type = 'folder';
    if (filter.tags?.ids.length) query.tags = filter.tags.mode === 'all' ? { $all: filter.tags.ids } : { $in: filter.tags.ids };
    return query;
  };
  return {
    /** Inserts under the id its caller chose (so that it can take the insert back). */
    async insert(input: NewCollection & { _id: string; importing?: { leaseMs: number; replaces?: string } }): Promise<string> {
      const now = new Date();
      const { metadata, importing, ...rest } = input;
      const { insertedId } = await col.insertOne({
        ...rest,
        _id: oid(input._id),
        teamId: oid(input.teamId),
        tmbId: oid(input.tmbId),
        datasetId: oid(input.datasetId),
        parentId: input.parentId ? oid(input.parentId) : null,
        fileId: input.fileId ? oid(input.fileId) : undefined,
        tags: input.tags ?? [],
        forbid: false,
        createTime: input.createTime ?? now,
        updateTime: now,
        metadataPairs: encodeMetadata(metadata),
        ...(importing
          ? { importing: { since: now, until: new Date(now.getTime() + importing.leaseMs), queued: false, ...(importing.replaces ? { replaces: oid(importing.replaces) } : {}) } }
          : {}),
      } as CollectionDoc);
      return insertedId.toHexString();
    },
    /**
     * Moves a running import's lease on; false once it lapsed or the import ended (the sweep may
     * be taking it back: its process must write no more). `queued`: every item is queued now.
     * On FerretDB the condition is read then written, so a renewal racing the sweep at the very
     * end of a lease can still land: the lease is long (a stall of two thirds of it) for that reason.
     */
    async renewImport(id: string, leaseMs: number, queued = false): Promise<boolean> {
      const now = new Date();
      const set: Record<string, unknown> = { 'importing.until': new Date(now.getTime() + leaseMs) };
      if (queued) set['importing.queued'] = true;
      return (await col.updateOne({ _id: oid(id), 'importing.until': { $gt: now } }, { $set: set })).matchedCount === 1;
    },
    /** Ends an import (the collection is whole); `live`: only while its lease runs (false: it lapsed, nothing changed). */
    async endImport(id: string, live: boolean): Promise<boolean> {
      const filter: Record<string, unknown> = { _id: oid(id), importing: { $exists: true } };
      if (live) filter['importing.until'] = { $gt: new Date() };
      return (await col.updateOne(filter, { $unset: { importing: '' } })).matchedCount === 1;
    },
    /** Imports whose lease lapsed before `at`, oldest first. */
    async lapsedImports(at: Date = new Date()): Promise<LapsedImport[]> {
      const docs = await col.find({ 'importing.until': { $lt: at } }).sort({ 'importing.until': 1 }).limit(1000).toArray();
      return docs.map((doc) => ({
        _id: doc._id.toHexString(),
        teamId: doc.teamId.toHexString(),
        datasetId: doc.datasetId.toHexString(),
        fileId: doc.fileId?.toHexString(),
        queued: doc.importing?.queued === true,
        replaces: doc.importing?.replaces?.toHexString(),
      }));
    },
    /** The latest lease end among imports started before `startedBefore` (none: undefined). */
    async lastImportLeaseEnd(startedBefore: Date): Promise<Date | undefined> {
      // The bound on `until` lets the sweep's index serve the read.
      const [doc] = await col.find({ 'importing.until': { $gte: new Date(0) }, 'importing.since': { $lt: startedBefore } }).sort({ 'importing.until': -1 }).limit(1).toArray();
      return doc?.importing?.until;
    },
    /** Another link collection beside `of` (same dataset and folder) holding this page's text, all of it queued: a sync's replacement, if any. */
    async findLinkReplacement(teamId: string, of: Pick<CollectionRecord, '_id' | 'datasetId' | 'parentId' | 'rawLink'>, hashRawText: string): Promise<CollectionRecord | null> {
      const doc = await col.findOne({
        teamId: oid(teamId),
        datasetId: oid(of.datasetId),
        parentId: of.parentId ? oid(of.parentId) : null,
        rawLink: of.rawLink,
        hashRawText,
        _id: { $ne: oid(of._id) },
        // A replacement still queueing is no replacement: the sweep takes it back if its sync died.
        ...WHOLE,
      });
      return doc ? toRecord(doc) : null;
    },
    async findById(teamId: string, id: string): Promise<CollectionRecord | null> {
      const doc = await col.findOne({ _id: oid(id), teamId: oid(teamId) });
      return doc ? toRecord(doc) : null;
    },
    /** For authorisation only: the caller's permission on the owning dataset decides (another team → unAuthDataset). */
    async findForAuth(id: string): Promise<CollectionRecord | null> {
      const doc = await col.findOne({ _id: oid(id) });
      return doc ? toRecord(doc) : null;
    },
    async list(teamId: string, filter: CollectionListFilter, page?: { skip: number; limit: number }) {
      const { docs, total } = await findPage(col, listQuery(teamId, filter), { updateTime: -1, _id: -1 }, page);
      return { items: docs.map(toRecord), total };
    },
    async update(teamId: string, id: string, patch: { name?: string; parentId?: string | null; tags?: string[]; forbid?: boolean; updateTime?: Date }) {
      const set: Record<string, unknown> = { ...patch };
      if (patch.parentId !== undefined) set.parentId = patch.parentId ? oid(patch.parentId) : null;
      await changing(teamId, () => col.updateOne({ _id: oid(id), teamId: oid(teamId) }, { $set: set }));
    },
    async setForbid(teamId: string, ids: string[], forbid: boolean) {
      await changing(teamId, () => col.updateMany({ _id: { $in: oids(ids) }, teamId: oid(teamId) }, { $set: { forbid } }));
    },
    async setText(teamId: string, id: string, patch: { name?: string; rawTextLength: number; hashRawText: string }) {
      await changing(teamId, () => col.updateOne({ _id: oid(id), teamId: oid(teamId) }, { $set: patch }));
    },
    /** The collection and every descendant collection, breadth first. */
    async withDescendants(teamId: string, id: string): Promise<CollectionRecord[]> {
      const root = await col.findOne({ _id: oid(id), teamId: oid(teamId) });
      if (!root) return [];
      const all = [root];
      const seen = new Set([root._id.toHexString()]);
      // Only folders hold collections (every create and move checks the parent), so only they are asked for children.
      let frontier = root.type === 'folder' ? [root._id] : [];
      while (frontier.length > 0) {
        const next = await findWithAnyOf(col, { teamId: oid(teamId), datasetId: root.datasetId }, 'parentId', frontier);
        frontier = [];
        // A loop, not push(...next), which overflows the call stack past ~125,000 collections; a
        // cycle in damaged data ends here instead of looping for ever.
        for (const doc of next) {
          if (seen.has(doc._id.toHexString())) continue;
          seen.add(doc._id.toHexString());
          all.push(doc);
          if (doc.type === 'folder') frontier.push(doc._id);
        }
      }
      return all.map(toRecord);
    },
    async byDatasets(teamId: string, datasetIds: string[]): Promise<CollectionRecord[]> {
      const docs = await col.find({ teamId: oid(teamId), datasetId: datasetIds.length === 1 ? oid(datasetIds[0]!) : { $in: oids(datasetIds) } }).toArray();
      return docs.map(toRecord);
    },
    /** Which of these files other collections of the team (not `excluding`) still use. */
    async fileIdsUsedElsewhere(teamId: string, fileIds: string[], excluding: string[]): Promise<string[]> {
      if (fileIds.length === 0) return [];
      const leaving = new Set(excluding);
      const docs = await findWithAnyOf(col, { teamId: oid(teamId) }, 'fileId', oids(fileIds), { fileId: 1 });
      return docs.flatMap((doc) => (doc.fileId && !leaving.has(doc._id.toHexString()) ? [doc.fileId.toHexString()] : []));
    },
    /** Which of the ids still name a collection, whatever its team (the after-write checks). */
    existingIds: (ids: string[]): Promise<Set<string>> => existingObjectIds(col, ids),
    async exists(teamId: string, id: string): Promise<boolean> {
      return (await col.countDocuments({ _id: oid(id), teamId: oid(teamId) }, { limit: 1 })) > 0;
    },
    async deleteMany(teamId: string, ids: string[]) {
      await changing(teamId, () => deleteEach(col, oids(ids).map((_id) => ({ _id, teamId: oid(teamId) }))));
    },
  };
}

export type CollectionRepo = ReturnType<typeof createCollectionRepo>;
