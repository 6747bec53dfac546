import type { Db, ObjectId } from 'mongodb';
import { findEachById, findWithAnyOf, type IndexDeclaration } from '../../infra/mongo.js';
import { newId, oid, oids, type Plain, plain } from '../../infra/plain-record.js';
import { bumpAfterWrite } from '../../infra/version-stamps.js';
import type { AppType } from './apps.schema.js';
import { parseStoredJson } from './stored-json.js';

export const APPS = 'apps';

/**
 * The list is served from a per-team read model (app-list.read-model.ts) loaded by `teamId`
 * alone, so no hot query filters on `parentId: null` (which no FerretDB index serves); root apps
 * keep `parentId: null` as the reference stores them.
 */
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
interface StoredApp {
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
  /** When the version the draft was last set from (publish, revert) is dated; later ones are dated after it. */
  draftVersionTime?: Date;
  /** A fresh id with each write of DRAFT_WORKFLOW_FIELDS: tells a write apart from a later one of the same values. */
  draftWriteId?: string;
  defaultPermission: number;
  inheritPermission: boolean;
}

/** An app document as the repository takes and returns it: ids as hex strings. */
export type AppDoc = Plain<StoredApp>;

/** What `update` may change (moves go through the permission service, owners never change). */
export type AppPatch = Partial<Omit<AppDoc, '_id' | 'teamId' | 'tmbId' | 'parentId'>>;

/** An app with its workflow decoded, as the API and other modules see it. */
export interface App extends Omit<AppDoc, 'modulesJson' | 'edgesJson' | 'chatConfigJson'> {
  modules: Record<string, unknown>[];
  edges: Record<string, unknown>[];
  chatConfig?: Record<string, unknown>;
}

/**
 * The parts of a draft that belong together (a publish's take-back sets them back all or none).
 * Every write of them carries a fresh `draftWriteId` (`update` adds one), so that a take-back
 * comparing it keeps a save landed since, even one that wrote the very values it wrote.
 */
export const DRAFT_WORKFLOW_FIELDS: readonly (keyof AppPatch)[] = ['modulesJson', 'edgesJson', 'chatConfigJson', 'type', 'version', 'scheduledTriggerConfig', 'draftWriteId'];

/** The fields an app is listed and judged with (the team's list read model). */
const LISTED_KEYS = ['_id', 'parentId', 'avatar', 'type', 'name', 'intro', 'tmbId', 'teamId', 'updateTime', 'pluginData', 'defaultPermission', 'inheritPermission'] as const;

/**
 * An HTTP plugin's schema and custom headers: up to ~1 MB each, and shown only to the app's
 * editors. The team's list is loaded without them (so that reading it, as every authorisation of
 * a read does, costs what the apps' names cost); a list answer reads them for the apps it shows
 * them for (pluginDataOf). PluginData's other fields are what a list load keeps of it.
 */
export const HEAVY_PLUGIN_FIELDS = ['apiSchemaStr', 'customHeaders'] as const;

/** LISTED_KEYS, pluginData without its heavy fields (its other fields in their stored order). */
export const LIST_PROJECTION = {
  ...Object.fromEntries(LISTED_KEYS.filter((key) => key !== 'pluginData').map((key) => [key, 1])),
  'pluginData.nodeVersion': 1,
  'pluginData.pluginUniId': 1,
};

/** A listed app: its `pluginData` lacks HEAVY_PLUGIN_FIELDS (see `listTeam`). */
export type AppListDoc = Pick<AppDoc, (typeof LISTED_KEYS)[number]>;

const LISTED_FIELDS = new Set<string>(LISTED_KEYS);

/** Apps whose pluginData holds one of HEAVY_PLUGIN_FIELDS. */
const holdingPluginSchema = { $or: HEAVY_PLUGIN_FIELDS.map((field) => ({ [`pluginData.${field}`]: { $exists: true } })) };

export function decodeApp(doc: AppDoc): App {
  const { modulesJson, edgesJson, chatConfigJson, ...rest } = doc;
  const app: App = { ...rest, modules: parseStoredJson(modulesJson, []), edges: parseStoredJson(edgesJson, []) };
  if (chatConfigJson !== undefined) app.chatConfig = parseStoredJson(chatConfigJson, {});
  return app;
}

export const encodeWorkflow = (value: unknown) => JSON.stringify(value ?? []);

/** What a write's fields held before it: those they had are set back, the others removed. */
export interface FieldsBefore {
  set: AppPatch;
  unset: (keyof AppPatch)[];
}

/** `fields` as the stored document `stored` held them. */
function storedFieldsBefore(stored: Record<string, unknown>, fields: readonly string[]): FieldsBefore {
  const set: Record<string, unknown> = {};
  const unset: (keyof AppPatch)[] = [];
  for (const field of fields as (keyof AppPatch)[]) {
    if (stored[field] === undefined) unset.push(field);
    else set[field] = stored[field];
  }
  return { set: set as AppPatch, unset };
}

/** The fields `written` sets, as `app` (decoded) had them: its workflow encoded back into its stored form. */
export function fieldsBefore(app: App, written: AppPatch): FieldsBefore {
  const stored: Record<string, unknown> = { ...app, modulesJson: JSON.stringify(app.modules), edgesJson: JSON.stringify(app.edges) };
  if (app.chatConfig !== undefined) stored.chatConfigJson = JSON.stringify(app.chatConfig);
  return storedFieldsBefore(stored, Object.keys(written));
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);

/**
 * A filter on the fields of `written` still holding what it wrote: an object field by field (a
 * stored object's key order need not match), an absent value as null (matched by a missing field).
 */
function stillHolding(written: Record<string, unknown>, prefix = ''): Record<string, unknown> {
  const filter: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(written)) {
    if (isPlainObject(value) && Object.keys(value).length > 0) Object.assign(filter, stillHolding(value, `${prefix}${field}.`));
    else filter[`${prefix}${field}`] = value ?? null;
  }
  return filter;
}

const changeOf = (set: AppPatch, unset: readonly (keyof AppPatch)[]) => ({
  ...(Object.keys(set).length > 0 ? { $set: set } : {}),
  ...(unset.length > 0 ? { $unset: Object.fromEntries(unset.map((field) => [field, 1 as const])) } : {}),
});

/**
 * After every write, whether it went through or failed midway, `changed(teamId, 'list')` is
 * awaited when it may change the team's list (the fields of LIST_PROJECTION), else
 * `changed(teamId, 'workflow')` (drafts): caches of whole apps follow both.
 */
export function createAppsRepo(db: Db, changed: (teamId: string, what: 'list' | 'workflow') => Promise<void>) {
  const apps = db.collection<StoredApp>(APPS);
  function changing<T>(teamId: string, write: () => Promise<T>, what: 'list' | 'workflow' = 'list', wrote?: (result: T) => boolean): Promise<T> {
    return bumpAfterWrite(write, () => changed(teamId, what), wrote);
  }
  /** Workflow-only writes (drafts) leave the list as it is. */
  const touching = (fields: readonly string[]) => (fields.some((field) => LISTED_FIELDS.has(field)) ? 'list' : 'workflow');

  return {
    /** A fresh app id: inserts choose theirs before anything is written (crash safety). */
    newId,

    /** One insert: the app appears with its whole workflow at once (id chosen by the caller). */
    async insert(doc: AppDoc): Promise<string> {
      const stored: StoredApp = { ...doc, _id: oid(doc._id), parentId: doc.parentId ? oid(doc.parentId) : null, teamId: oid(doc.teamId), tmbId: oid(doc.tmbId) };
      await changing(doc.teamId, () => apps.insertOne(stored));
      return doc._id;
    },

    async findById(id: string): Promise<App | null> {
      const doc = await apps.findOne({ _id: oid(id) });
      return doc ? decodeApp(plain(doc)) : null;
    },

    async findInTeam(teamId: string, id: string): Promise<App | null> {
      const doc = await apps.findOne({ _id: oid(id), teamId: oid(teamId) });
      return doc ? decodeApp(plain(doc)) : null;
    },

    /**
     * Every app of the team in the list's shape (the read model's load), without the heavy plugin
     * fields, and the ids of the apps that have them (their values are read by `pluginDataOf`).
     */
    async listTeam(teamId: string): Promise<{ apps: AppListDoc[]; withPluginSchema: Set<string> }> {
      const [docs, holders] = await Promise.all([
        apps.find({ teamId: oid(teamId) }, { projection: LIST_PROJECTION }).toArray(),
        apps.find({ teamId: oid(teamId), ...holdingPluginSchema }, { projection: { _id: 1 } }).toArray(),
      ]);
      return { apps: docs.map((doc) => plain(doc) as AppListDoc), withPluginSchema: new Set(holders.map((doc) => doc._id.toHexString())) };
    },

    /** These apps of the team in the list's shape (one point read each): an app judged on its own. */
    async findListed(teamId: string, ids: readonly string[]): Promise<AppListDoc[]> {
      const docs = await findEachById(apps, oids(ids), LIST_PROJECTION);
      return docs.filter((doc) => doc.teamId.toHexString() === teamId).map((doc) => plain(doc) as AppListDoc);
    },

    /** The whole `pluginData` of these apps of the team, by id (what a list answer shows an app's editors). */
    async pluginDataOf(teamId: string, ids: readonly string[]): Promise<Map<string, PluginData>> {
      const docs = await findWithAnyOf(apps, { teamId: oid(teamId) }, '_id', oids(ids), { _id: 1, pluginData: 1 });
      return new Map(docs.flatMap((doc) => (doc.pluginData ? [[doc._id.toHexString(), doc.pluginData] as const] : [])));
    },

    async children(teamId: string, parentId: string): Promise<App[]> {
      const docs = await apps.find({ teamId: oid(teamId), parentId: oid(parentId) }).toArray();
      return docs.map((doc) => decodeApp(plain(doc)));
    },

    /** Every app of the team as (id, parentId, type), for cascades. */
    async teamTree(teamId: string): Promise<{ id: string; parentId: string | null; type: AppType }[]> {
      const docs = await apps.find({ teamId: oid(teamId) }, { projection: { _id: 1, parentId: 1, type: 1 } }).toArray();
      return docs.map((d) => ({ id: d._id.toHexString(), parentId: d.parentId ? d.parentId.toHexString() : null, type: d.type }));
    },

    /**
     * Sets the fields of `written` (with a fresh `draftWriteId` when it writes a part of the draft
     * and names none) and removes those of `unset`. `before`, when given, hears what
     * those fields held just before (once the write landed, so before its stamp bump, which may
     * fail): what taking the write back sets again (takeBackWrite).
     */
    async update(teamId: string, id: string, written: AppPatch, unset: readonly (keyof AppPatch)[] = [], before?: (previous: FieldsBefore) => void): Promise<void> {
      const marked = written.draftWriteId === undefined && [...Object.keys(written), ...unset].some((field) => DRAFT_WORKFLOW_FIELDS.includes(field as keyof AppPatch));
      const set = marked ? { ...written, draftWriteId: newId() } : written;
      const fields = [...Object.keys(set), ...unset];
      if (fields.length === 0) return;
      const filter = { _id: oid(id), teamId: oid(teamId) };
      const change = changeOf(set, unset);
      const write = async () => {
        if (!before) return void (await apps.updateOne(filter, change));
        // The whole document: FerretDB 1.x refuses a projection in findAndModify.
        const previous = await apps.findOneAndUpdate(filter, change, { returnDocument: 'before' });
        if (previous) before(storedFieldsBefore(previous as Record<string, unknown>, fields));
      };
      await changing(teamId, write, touching(fields));
    },

    /**
     * Takes back a write of `written`: its fields get `before` again (fieldsBefore), each only
     * while the app still holds what was written there, so that a write landed since is kept (a
     * draft save, a chat turn's updateTime). The fields of `together` (a workflow's parts) are set
     * back all or none. One write when nothing changed since. Answers the fields set back.
     */
    async takeBackWrite(teamId: string, id: string, written: AppPatch, before: FieldsBefore, together: readonly (keyof AppPatch)[] = []): Promise<(keyof AppPatch)[]> {
      const fields = Object.keys(written) as (keyof AppPatch)[];
      const restore = async (group: readonly (keyof AppPatch)[]): Promise<(keyof AppPatch)[]> => {
        const inGroup = ([field]: [string, unknown]) => group.includes(field as keyof AppPatch);
        const expected = Object.fromEntries(Object.entries(written).filter(inGroup));
        const set = Object.fromEntries(Object.entries(before.set).filter(inGroup)) as AppPatch;
        const unset = before.unset.filter((field) => group.includes(field));
        if (Object.keys(set).length + unset.length === 0) return [];
        const result = await apps.updateOne({ _id: oid(id), teamId: oid(teamId), ...stillHolding(expected) }, changeOf(set, unset));
        return result.matchedCount === 1 ? [...group] : [];
      };
      const write = async () => {
        const all = await restore(fields);
        if (all.length > 0) return all;
        const grouped = fields.filter((field) => together.includes(field));
        const groups = [grouped, ...fields.filter((field) => !together.includes(field)).map((field) => [field])].filter((group) => group.length > 0);
        const restored: (keyof AppPatch)[] = [];
        for (const group of groups) restored.push(...(await restore(group)));
        return restored;
      };
      return changing(teamId, write, touching(fields), (restored) => restored.length > 0);
    },

    async countByTypes(teamId: string, types: readonly AppType[]): Promise<number> {
      return apps.countDocuments({ teamId: oid(teamId), type: { $in: [...types] } });
    },

    /**
     * Deletes app documents, deepest level first, so no app is left whose parent is gone.
     * `before` runs before each level's write (it throws to stop there); `deleted` hears each level gone.
     */
    async deleteLevels(teamId: string, idsDeepestFirst: string[][], each: { before?: () => void; deleted?: (level: string[]) => void } = {}): Promise<void> {
      await changing(teamId, async () => {
        for (const level of idsDeepestFirst) {
          if (level.length === 0) continue;
          each.before?.();
          await apps.deleteMany({ teamId: oid(teamId), _id: { $in: oids(level) } });
          each.deleted?.(level);
        }
      });
    },
  };
}

export type AppsRepo = ReturnType<typeof createAppsRepo>;
