import { type Db, type Filter, GridFSBucket, ObjectId } from 'mongodb';
import { escapeRegex, type IndexDeclaration } from '../../infra/mongo.js';
import type { AppType } from './apps.schema.js';

export const APPS = 'apps';

export const APP_INDEXES: IndexDeclaration[] = [
  { collection: APPS, key: { teamId: 1, updateTime: -1 } },
  { collection: APPS, key: { teamId: 1, type: 1 } },
  { collection: APPS, key: { teamId: 1, parentId: 1, updateTime: -1 } },
];

export interface PluginData {
  nodeVersion?: string;
  pluginUniId?: string;
  apiSchemaStr?: string;
  customHeaders?: string;
}

/**
 * Stored app. Workflow parts are stored as JSON text: node inputs hold nested arrays and
 * user-keyed objects that FerretDB 1.x refuses; only this module reads them (decoded here).
 */
export interface AppDoc {
  _id: ObjectId;
  parentId: ObjectId | null;
  teamId: ObjectId;
  tmbId: ObjectId;
  name: string;
  type: AppType;
  version: 'v1' | 'v2';
  avatar: string;
  intro: string;
  updateTime: Date;
  teamTags: string[];
  modulesJson: string;
  edgesJson: string;
  chatConfigJson?: string;
  pluginData?: PluginData;
  scheduledTriggerConfig?: { cronString?: string; timezone?: string; defaultPrompt?: string } | null;
  scheduledTriggerNextTime?: Date | null;
  defaultPermission: number;
  inheritPermission: boolean;
}

/** An app with its workflow decoded, as the API and other modules see it. */
export interface App extends Omit<AppDoc, 'modulesJson' | 'edgesJson' | 'chatConfigJson'> {
  modules: Record<string, unknown>[];
  edges: Record<string, unknown>[];
  chatConfig?: Record<string, unknown>;
}

export const LIST_PROJECTION = {
  _id: 1,
  parentId: 1,
  avatar: 1,
  type: 1,
  name: 1,
  intro: 1,
  tmbId: 1,
  teamId: 1,
  updateTime: 1,
  pluginData: 1,
  defaultPermission: 1,
  inheritPermission: 1,
} as const;

export type AppListDoc = Pick<AppDoc, keyof typeof LIST_PROJECTION>;

const oid = (id: string) => new ObjectId(id);
/** Other modules may store app ids as ObjectId or text; match both. */

function parseJson<T>(text: string | undefined, fallback: T): T {
  if (!text) return fallback;
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
}

export function decodeApp(doc: AppDoc): App {
  const { modulesJson, edgesJson, chatConfigJson, ...rest } = doc;
  const app: App = { ...rest, modules: parseJson(modulesJson, []), edges: parseJson(edgesJson, []) };
  if (chatConfigJson !== undefined) app.chatConfig = parseJson(chatConfigJson, {});
  return app;
}

export const encodeWorkflow = (value: unknown) => JSON.stringify(value ?? []);

export function createAppsRepo(db: Db) {
  const apps = db.collection<AppDoc>(APPS);

  return {
    async insert(doc: Omit<AppDoc, '_id'>): Promise<string> {
      const result = await apps.insertOne({ ...doc, _id: new ObjectId() });
      return result.insertedId.toHexString();
    },

    async findById(id: string): Promise<App | null> {
      const doc = await apps.findOne({ _id: oid(id) });
      return doc ? decodeApp(doc) : null;
    },

    async findInTeam(teamId: string, id: string): Promise<App | null> {
      const doc = await apps.findOne({ _id: oid(id), teamId: oid(teamId) });
      return doc ? decodeApp(doc) : null;
    },

    async list(input: {
      teamId: string;
      parentId?: string | null;
      types?: AppType[];
      searchKey?: string;
      limit: number;
    }): Promise<AppListDoc[]> {
      const filter: Filter<AppDoc> = { teamId: oid(input.teamId) };
      if (input.parentId !== undefined) filter.parentId = input.parentId === null ? null : oid(input.parentId);
      if (input.types) filter.type = { $in: input.types };
      if (input.searchKey) {
        const regex = { $regex: escapeRegex(input.searchKey), $options: 'i' };
        filter.$or = [{ name: regex }, { intro: regex }];
      }
      return apps.find(filter, { projection: LIST_PROJECTION, sort: { updateTime: -1, _id: -1 }, limit: input.limit }).toArray() as Promise<AppListDoc[]>;
    },

    async children(teamId: string, parentId: string): Promise<App[]> {
      const docs = await apps.find({ teamId: oid(teamId), parentId: oid(parentId) }).toArray();
      return docs.map(decodeApp);
    },

    /** Every app of the team as (id, parentId, type), for cascades. */
    async teamTree(teamId: string): Promise<{ id: string; parentId: string | null; type: AppType }[]> {
      const docs = await apps.find({ teamId: oid(teamId) }, { projection: { _id: 1, parentId: 1, type: 1 } }).toArray();
      return docs.map((d) => ({ id: d._id.toHexString(), parentId: d.parentId ? d.parentId.toHexString() : null, type: d.type }));
    },

    async names(ids: string[]): Promise<Map<string, { name: string; parentId: string | null; teamId: string }>> {
      const docs = await apps.find({ _id: { $in: ids.map(oid) } }, { projection: { name: 1, parentId: 1, teamId: 1 } }).toArray();
      return new Map(docs.map((d) => [d._id.toHexString(), { name: d.name, parentId: d.parentId ? d.parentId.toHexString() : null, teamId: d.teamId.toHexString() }]));
    },

    async update(teamId: string, id: string, set: Partial<Omit<AppDoc, '_id' | 'teamId'>>): Promise<void> {
      if (Object.keys(set).length === 0) return;
      await apps.updateOne({ _id: oid(id), teamId: oid(teamId) }, { $set: set });
    },

    async countByTypes(teamId: string, types: readonly AppType[]): Promise<number> {
      return apps.countDocuments({ teamId: oid(teamId), type: { $in: [...types] } });
    },

    /** Deletes app documents, deepest level first, so no app is left whose parent is gone. */
    async deleteLevels(teamId: string, idsDeepestFirst: string[][]): Promise<void> {
      for (const level of idsDeepestFirst) {
        if (level.length > 0) await apps.deleteMany({ teamId: oid(teamId), _id: { $in: level.map(oid) } });
      }
    },
  };
}

export type AppsRepo = ReturnType<typeof createAppsRepo>;
