import { z } from 'zod';
import { zBoolLike, zIntLike, zObjectId, zPageSize, zPageNum } from '../../infra/zod.js';

const message = z
  .object({
    role: z.enum(['system', 'user', 'assistant', 'tool', 'function']),
    content: z.unknown().optional(),
    dataId: z.string().max(100).optional(),
    interactive: z.any().optional(),
    tool_calls: z.array(z.object({ id: z.string(), function: z.object({ name: z.string().optional(), arguments: z.string().optional() }).optional() })).optional(),
    tool_call_id: z.string().optional(),
    function_call: z.object({ name: z.string().optional(), arguments: z.string().optional() }).optional(),
    name: z.string().optional(),
  })
  .loose();

const chatId = z.string().max(250, 'chatId must be under 250 characters');
const variables = z.record(z.string(), z.unknown()).default({});

/** Share and team params accepted by chat endpoints (read by the auth resolvers). */
const outLinkParams = {
  shareId: z.string().optional(),
  outLinkUid: z.string().optional(),
  teamId: z.string().optional(),
  teamToken: z.string().optional(),
};

export const completionsSchema = z
  .object({
    messages: z.array(message, { error: 'messages is not array' }).max(1000).default([]),
    chatId: chatId.optional(),
    appId: zObjectId.optional(),
    variables,
    detail: zBoolLike.default(false),
    stream: zBoolLike.default(false),
    responseChatItemId: z.string().min(1).max(100).optional(),
    /** 4.8.13: merged into chat.metadata. */
    metadata: z.record(z.string(), z.unknown()).optional(),
    /** 4.8.13: the log user of API/session chats (stored as outLinkUid). */
    customUid: z.string().min(1).max(200).optional(),
    ...outLinkParams,
  })
  .loose();

export const chatTestSchema = z.object({
  messages: z.array(message).max(1000).default([]),
  nodes: z.array(z.any(), { error: 'Nodes is not array' }),
  edges: z.array(z.any(), { error: 'Edges is not array' }),
  variables,
  appId: zObjectId,
  appName: z.string().max(300).optional(),
  chatConfig: z.record(z.string(), z.unknown()).optional(),
});

export const debugSchema = z.object({
  nodes: z.array(z.any(), { error: 'nodes must be an array' }),
  edges: z.array(z.any(), { error: 'edges must be an array' }),
  variables,
  appId: zObjectId,
});

export const initSchema = z.object({ appId: zObjectId.optional(), chatId: chatId.optional(), loadCustomFeedbacks: zBoolLike.optional() });
export const teamInitSchema = z.object({ appId: zObjectId, chatId: chatId.optional(), teamId: zObjectId, teamToken: z.string().min(1) });

export const historiesSchema = z.object({ appId: zObjectId.optional(), ...outLinkParams });
export const updateHistorySchema = z.object({
  appId: zObjectId,
  chatId: chatId.min(1),
  title: z.string().max(300).optional(),
  customTitle: z.string().max(300).optional(),
  top: zBoolLike.optional(),
  ...outLinkParams,
});
export const chatRefSchema = z.object({ appId: zObjectId, chatId: chatId.min(1), ...outLinkParams });
export const clearHistoriesSchema = z.object({ appId: zObjectId.optional(), ...outLinkParams });
export const itemDeleteSchema = z.object({ appId: zObjectId, chatId: chatId.optional(), contentId: z.string().max(100).optional(), ...outLinkParams });
export const resDataSchema = z.object({ appId: zObjectId.optional(), chatId: chatId.optional(), dataId: z.string().max(100).optional(), ...outLinkParams });

export const feedbackSchema = z.object({
  appId: zObjectId,
  chatId: chatId.min(1),
  chatItemId: z.string().max(100).optional(),
  dataId: z.string().max(100).optional(),
  userGoodFeedback: z.string().max(2000).optional(),
  userBadFeedback: z.string().max(2000).optional(),
  ...outLinkParams,
});
export const closeCustomSchema = z.object({
  appId: zObjectId,
  chatId: chatId.min(1),
  chatItemId: z.string().max(100).optional(),
  dataId: z.string().max(100).optional(),
  index: zIntLike.pipe(z.number().int().min(0)),
});

export const guideCountSchema = z.object({ appId: zObjectId.optional() });
export const guideListSchema = z.object({
  appId: zObjectId,
  current: zPageNum,
  pageSize: zPageSize(30, 10),
  offset: zIntLike.pipe(z.number().int().min(0)).optional(),
  searchKey: z.string().max(200).optional(),
});
export const guideQuerySchema = z.object({ appId: zObjectId, searchKey: z.string().max(200).default(''), ...outLinkParams });
export const guideCreateSchema = z.object({ appId: zObjectId, textList: z.array(z.string().trim().min(1).max(500)).min(1).max(1000) });
export const guideUpdateSchema = z.object({ appId: zObjectId, dataId: zObjectId, text: z.string().trim().min(1).max(500) });
export const guideDeleteSchema = z.object({ appId: zObjectId, dataIdList: z.array(zObjectId).max(1000) });
export const guideDeleteAllSchema = z.object({ appId: zObjectId });
