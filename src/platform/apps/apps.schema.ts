import { z } from 'zod';
import { MAX_GRAPH_EDGES, MAX_GRAPH_NODES, MAX_NODE_PARTS } from '../../domain/workflow/graph-limits.js';
import { MAX_FREE_FORM_KEYS, withKeyLimit, zBoolLike, zDate, zIntLike, zName, zObjectId, zOffset, zPageNum, zPageSize, zParentId, zSearchText } from '../../infra/zod.js';
import { permissionResponse } from '../permissions/permission.schema.js';

/** Stored AppTypeEnum values ('advanced' is the workflow type). */
export const APP_TYPES = ['folder', 'simple', 'advanced', 'plugin', 'httpPlugin'] as const;
export type AppType = (typeof APP_TYPES)[number];
export const APP_FOLDER_TYPES: readonly AppType[] = ['folder', 'httpPlugin'];
/** Types counted by the team's app limit and shown among recently chatted apps. */
export const CHAT_APP_TYPES: readonly AppType[] = ['simple', 'advanced', 'plugin'];

export const zAppType = z.enum(APP_TYPES, { message: `must be one of ${APP_TYPES.join(', ')}` });
const zAppId = zObjectId;
/**
 * A node's inputs or outputs: objects (the workflow code reads their keys and values). Graphs are
 * bounded (domain/workflow/graph-limits.ts): every run of a node reads all its inputs.
 */
const zNodeParts = z
  .array(z.record(z.string(), z.unknown()), { message: 'must be an array of objects' })
  .max(MAX_NODE_PARTS, { message: `a node has at most ${MAX_NODE_PARTS} inputs and ${MAX_NODE_PARTS} outputs` });
const nodeList = <T extends z.ZodType>(node: T) =>
  z.array(node, { message: 'must be an array of node objects' }).max(MAX_GRAPH_NODES, { message: `a workflow has at most ${MAX_GRAPH_NODES} nodes` });
/** Nodes as the editor sends them, stored as sent (a node without inputs runs as one with none: withNodeLists). */
export const zNodes = nodeList(z.object({ inputs: zNodeParts.optional(), outputs: zNodeParts.optional() }).loose());
/** Nodes of a run the editor sends (chatTest, debug): a node without inputs or outputs has none. */
export const zRunNodes = nodeList(z.object({ inputs: zNodeParts.default([]), outputs: zNodeParts.default([]) }).loose());
export const zEdges = z
  .array(z.record(z.string(), z.unknown()), { message: 'must be an array of edge objects' })
  .max(MAX_GRAPH_EDGES, { message: `a workflow has at most ${MAX_GRAPH_EDGES} edges` });
/**
 * A chat config is stored as JSON text, except its scheduled trigger, which is stored as fields:
 * that part is the reference's three strings (other keys dropped, as its model does), so no key
 * or value a database refuses reaches a field.
 */
export const zScheduledTrigger = z
  .object({ cronString: z.string().max(200).optional(), timezone: z.string().max(100).optional(), defaultPrompt: z.string().max(10_000).optional() })
  .nullable();
/**
 * Keys a chat config may hold at all levels: twice the bound of other free-form objects, as it
 * holds the app's variable definitions (about ten fields each, two more per select option), which
 * every chat of the app stores again (its variableList) and reads back on each turn.
 */
export const MAX_CHAT_CONFIG_KEYS = 2 * MAX_FREE_FORM_KEYS;
export const zChatConfig = withKeyLimit(z.object({ scheduledTriggerConfig: zScheduledTrigger.optional() }).catchall(z.unknown()), MAX_CHAT_CONFIG_KEYS);
const zAvatar = z.string().max(1000);
const zIntro = z.string().max(5000);

export const appIdInput = z.object({ appId: zAppId });

/**
 * A simple app's form (the reference's AppSimpleEditFormType) sent instead of nodes: the
 * server builds the workflow from it (see src/domain/workflow/simple-app.ts).
 */
const simpleFormFields = {
  aiSettings: z
    .object({
      model: z.string().max(200).optional(),
      systemPrompt: z.string().max(100_000).optional(),
      temperature: z.number().min(0).max(10).optional(),
      maxToken: z.number().int().min(0).optional(),
      isResponseAnswerText: z.boolean().optional(),
      maxHistories: z.number().int().min(0).max(100).optional(),
    })
    .optional(),
  dataset: z
    .object({
      datasets: z.array(z.object({ datasetId: zObjectId }).passthrough()).max(100).optional(),
      searchMode: z.enum(['embedding', 'fullTextRecall', 'mixedRecall']).optional(),
      similarity: z.number().min(0).max(1).optional(),
      limit: z.number().int().min(0).optional(),
      usingReRank: z.boolean().optional(),
      datasetSearchUsingExtensionQuery: z.boolean().optional(),
      datasetSearchExtensionModel: z.string().max(200).optional(),
      datasetSearchExtensionBg: z.string().max(10_000).optional(),
    })
    .optional(),
  selectedTools: zNodes.max(50).optional(),
};

export const createAppInput = z.object({
  parentId: zParentId.optional(),
  name: zName,
  avatar: zAvatar.optional(),
  intro: zIntro.optional(),
  type: zAppType,
  /** Absent only when a simple app's form is sent instead. */
  modules: zNodes.optional(),
  edges: zEdges.optional(),
  chatConfig: zChatConfig.optional(),
  ...simpleFormFields,
});

export const createFolderInput = z.object({ parentId: zParentId.optional(), name: zName, intro: zIntro.optional() });

export const folderPathInput = z.object({ parentId: z.union([zObjectId, z.literal(''), z.null()]).optional() });

export const listAppsInput = z.object({
  parentId: zParentId.optional(),
  type: z.union([zAppType, z.array(zAppType)]).optional(),
  getRecentlyChat: zBoolLike.optional(),
  searchKey: zSearchText,
});

export const updateAppInput = z.object({
  appId: zAppId,
  parentId: zParentId.optional(),
  name: zName.optional(),
  type: zAppType.optional(),
  avatar: zAvatar.optional(),
  intro: zIntro.optional(),
  nodes: zNodes.optional(),
  edges: zEdges.optional(),
  chatConfig: zChatConfig.optional(),
  teamTags: z.array(z.string().max(100)).max(100).optional(),
  defaultPermission: zIntLike.optional(),
  ...simpleFormFields,
});

export const transitionInput = z.object({ appId: zAppId, createNew: zBoolLike.optional() });

export const chatLogsInput = z.object({
  appId: zAppId,
  pageNum: zPageNum,
  pageSize: zPageSize(30, 20),
  dateStart: zDate.optional(),
  dateEnd: zDate.optional(),
});

export const publishInput = z.object({
  appId: zAppId,
  nodes: zNodes.default([]),
  edges: zEdges.default([]),
  chatConfig: zChatConfig.optional(),
  type: z.enum(['simple', 'advanced', 'plugin']).optional(),
  isPublish: zBoolLike.optional(),
  versionName: z.string().max(200).optional(),
  ...simpleFormFields,
});

export const versionListInput = z.object({
  appId: zAppId,
  current: zPageNum.optional(),
  offset: zOffset.optional(),
  pageSize: zPageSize(30, 10),
});

export const versionIdInput = z.object({ appId: zAppId, versionId: zObjectId });

export const revertInput = z.object({
  appId: zAppId,
  versionId: zObjectId,
  editNodes: zNodes.default([]),
  editEdges: zEdges.default([]),
  editChatConfig: zChatConfig.optional(),
});

export const renameVersionInput = z.object({ appId: zAppId, versionId: zObjectId, versionName: z.string().trim().min(1).max(200) });

const zPluginData = z.object({ apiSchemaStr: z.string().max(2_000_000).optional(), customHeaders: z.string().max(100_000).optional() });

export const httpPluginCreateInput = z.object({
  parentId: zParentId.optional(),
  name: zName,
  avatar: zAvatar.optional(),
  intro: zIntro.optional(),
  pluginData: zPluginData,
});

export const httpPluginUpdateInput = z.object({
  appId: zAppId,
  name: zName,
  avatar: zAvatar.optional(),
  intro: zIntro.optional(),
  pluginData: zPluginData,
});

export const schemaUrlInput = z.object({ url: z.string().min(1).max(2000) });

export const collaboratorUpdateInput = z.object({
  appId: zAppId,
  tmbIds: z.array(zObjectId).min(1).max(500),
  permission: zIntLike,
});
export const collaboratorDeleteInput = z.object({ appId: zAppId, tmbId: zObjectId });

export const systemPluginListInput = z.object({ searchKey: zSearchText, parentId: z.string().max(200).nullable().optional() });
export const pluginPathInput = z.object({ parentId: z.string().max(200).nullable().optional() });
export const previewNodeInput = z.object({ appId: z.string().min(1).max(200) });
export const templateDetailInput = z.object({ templateId: z.string().min(1).max(100) });

/**
 * One app of `core/app/list`, fields in the order the service writes them (the compiled
 * serialiser writes declared fields in this order). pluginData is open: its fields are the
 * plugin's; the apiSchemaStr and customHeaders are absent for members who may not edit.
 */
export const appListResponse = z.array(
  z.object({
    _id: z.string(),
    parentId: z.string().nullable(),
    tmbId: z.string(),
    avatar: z.string(),
    type: zAppType,
    name: z.string(),
    intro: z.string(),
    updateTime: z.date(),
    permission: permissionResponse,
    defaultPermission: z.number().int(),
    pluginData: z.record(z.string(), z.unknown()).optional(),
    inheritPermission: z.boolean(),
  }),
);
