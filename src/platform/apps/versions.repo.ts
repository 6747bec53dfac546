import { type Db, ObjectId } from 'mongodb';
import { findPage } from '../../infra/find-page.js';
import { deleteEach, type IndexDeclaration } from '../../infra/mongo.js';
import { parseStoredJson } from './stored-json.js';

export const APP_VERSIONS = 'app_versions';
/** An app's versions newest first, then `_id` (the version list, the latest published version). */
export const APP_VERSION_INDEXES: IndexDeclaration[] = [{ collection: APP_VERSIONS, key: { appId: 1, time: -1, _id: -1 } }];
/** Indexes of earlier versions the ones above replace (a prefix of one of them): none reads them. */
export const RETIRED_APP_VERSION_INDEXES: IndexDeclaration[] = [{ collection: APP_VERSIONS, key: { appId: 1, time: -1 } }];

interface VersionDoc {
  _id: ObjectId;
  appId: ObjectId;
  time: Date;
  nodesJson: string;
  edgesJson: string;
  chatConfigJson?: string;
  isPublish?: boolean;
  versionName: string;
  tmbId?: string;
}

/** A version as the API shows it (reference AppVersionSchemaType). */
export interface AppVersion {
  _id: string;
  appId: string;
  time: Date;
  nodes: Record<string, unknown>[];
  edges: Record<string, unknown>[];
  chatConfig?: Record<string, unknown>;
  isPublish?: boolean;
  versionName: string;
  tmbId?: string;
}

const oid = (id: string) => new ObjectId(id);

function decode(doc: VersionDoc): AppVersion {
  const version: AppVersion = {
    _id: doc._id.toHexString(),
    appId: doc.appId.toHexString(),
    time: doc.time,
    nodes: parseStoredJson(doc.nodesJson, []),
    edges: parseStoredJson(doc.edgesJson, []),
    versionName: doc.versionName ?? '',
  };
  if (doc.chatConfigJson !== undefined) version.chatConfig = parseStoredJson(doc.chatConfigJson, {});
  if (doc.isPublish !== undefined) version.isPublish = doc.isPublish;
  if (doc.tmbId !== undefined) version.tmbId = doc.tmbId;
  return version;
}

export function createVersionsRepo(db: Db) {
  const versions = db.collection<VersionDoc>(APP_VERSIONS);
  return {
    /** `_id`: chosen by a caller that may have to take the version back. */
    async insert(input: {
      _id?: string;
      appId: string;
      nodes: unknown[];
      edges: unknown[];
      chatConfig?: Record<string, unknown>;
      isPublish?: boolean;
      versionName?: string;
      tmbId?: string;
      time?: Date;
    }): Promise<string> {
      const doc: VersionDoc = {
        _id: input._id ? oid(input._id) : new ObjectId(),
        appId: oid(input.appId),
        time: input.time ?? new Date(),
        nodesJson: JSON.stringify(input.nodes),
        edgesJson: JSON.stringify(input.edges),
        versionName: input.versionName ?? '',
      };
      if (input.chatConfig !== undefined) doc.chatConfigJson = JSON.stringify(input.chatConfig);
      if (input.isPublish !== undefined) doc.isPublish = input.isPublish;
      if (input.tmbId !== undefined) doc.tmbId = input.tmbId;
      await versions.insertOne(doc);
      return doc._id.toHexString();
    },

    async findOfApp(appId: string, versionId: string): Promise<AppVersion | null> {
      const doc = await versions.findOne({ _id: oid(versionId), appId: oid(appId) });
      return doc ? decode(doc) : null;
    },

    async latestPublished(appId: string): Promise<AppVersion | null> {
      const doc = await versions.findOne({ appId: oid(appId), isPublish: true }, { sort: { time: -1, _id: -1 } });
      return doc ? decode(doc) : null;
    },

    async page(appId: string, skip: number, limit: number): Promise<{ total: number; list: AppVersion[] }> {
      const { docs, total } = await findPage(versions, { appId: oid(appId) }, { time: -1, _id: -1 }, { skip, limit });
      return { total, list: docs.map(decode) };
    },

    /** Cascade of an app delete (versions carry no team: the ids are the caller's team's apps). */
    async deleteByApps(appIds: string[]): Promise<void> {
      // App by app: an `$in` read every version of the deployment on FerretDB.
      await deleteEach(versions, appIds.map((appId) => ({ appId: oid(appId) })));
    },
    /** Takes back versions a failed publish or revert wrote. */
    async deleteOfApp(appId: string, versionIds: string[]): Promise<void> {
      if (versionIds.length === 0) return;
      await versions.deleteMany({ appId: oid(appId), _id: { $in: versionIds.map(oid) } });
    },
    async rename(appId: string, versionId: string, versionName: string): Promise<boolean> {
      const result = await versions.updateOne({ _id: oid(versionId), appId: oid(appId) }, { $set: { versionName } });
      return result.matchedCount === 1;
    },
  };
}

export type VersionsRepo = ReturnType<typeof createVersionsRepo>;
