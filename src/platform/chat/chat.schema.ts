import { z } from 'zod';
import { isRecord } from '../../domain/workflow/input-shapes.js';
import { isObjectIdHex } from '../../infra/mongo.js';
import { zBoolLike, zFreeFormRecord, zIntLike, zObjectId, zOffset, zPageNum, zPageSize, zSearchText } from '../../infra/zod.js';
import { MAX_CHAT_CONFIG_KEYS, zEdges, zRunNodes } from '../apps/apps.schema.js';
import { MAX_BASE64_CHARS } from '../datasets/files/file.service.js';
import { imagePartUrl, inlineImageProblem, isDataUrl, MAX_INLINE_IMAGES_PER_REQUEST } from './inline-images.js';

/**
 * A nested optional field that OpenAI clients may send as null: null reads as absent. (Top-level
 * fields need no wrapper: route validation reads any optional field sent as null as absent.)
 */
const nullish = <T extends z.ZodType>(schema: T) => schema.nullish().transform((value) => value ?? undefined);

/** A boolean as clients send it: true/false, 1/0, or their text forms; null reads as absent. */
const lenientBool = z
  .union([z.boolean(), z.literal(0), z.literal(1), z.enum(['true', 'false', '1', '0', ''])], { error: 'expected a boolean' })
  .nullish()
  .transform((value) => value === true || value === 1 || value === 'true' || value === '1');

const toolCall = z.object({ id: z.string(), function: nullish(z.object({ name: nullish(z.string()), arguments: nullish(z.string()) })) }).loose();

/**
 * A paused workflow's question (a userSelect node) as a client sends it back in an assistant
 * message: the run resumes from it, so every part it reads is checked here (a 400 naming the
 * field, never a TypeError in the resume).
 */
const interactive = z
  .object({
    type: z.literal('userSelect'),
    params: z
      .object({
        description: z.string().max(10_000).default(''),
        userSelectOptions: z.array(z.object({ key: z.string().max(200), value: z.string().max(10_000) }).loose()).max(100),
        userSelectedVal: z.string().max(10_000).optional(),
      })
      .loose(),
    entryNodeIds: z.array(z.string().max(200)).max(1000),
    memoryEdges: z
      .array(
        z
          .object({
            source: z.string().max(200),
            target: z.string().max(200),
            sourceHandle: z.string().max(400).optional(),
            targetHandle: z.string().max(400).optional(),
            status: z.enum(['waiting', 'active', 'skipped']).optional(),
          })
          .loose(),
      )
      .max(10_000),
    nodeOutputs: z.array(z.object({ nodeId: z.string().max(200), key: z.string().max(200), value: z.unknown() }).loose()).max(10_000),
  })
  .loose();

/**
 * A message's content stays free-form (text, parts, anything else ignored), but an image part's
 * URL is stored and shown again: it must be text, at most as long as uploadImage takes, and a
 * data: URL must be a base64 raster image (inline-images.ts). The bare-string form some clients
 * send (`image_url: "..."`) is read as OpenAI's `{url}`.
 */
const messageContent = z
  .unknown()
  .superRefine((content, context) => {
    if (!Array.isArray(content)) return;
    content.forEach((part: unknown, index) => {
      if (!isImagePart(part)) return;
      const url = imagePartUrl(part);
      if (url === undefined || url === null) return;
      const path = typeof part.image_url === 'string' ? [index, 'image_url'] : [index, 'image_url', 'url'];
      if (typeof url !== 'string') context.addIssue({ code: 'custom', path, message: 'expected a string (the image URL)' });
      else if (url.length > MAX_BASE64_CHARS) context.addIssue({ code: 'custom', path, message: `an image URL has at most ${MAX_BASE64_CHARS} characters` });
      else {
        const problem = inlineImageProblem(url);
        if (problem) context.addIssue({ code: 'custom', path, message: problem });
      }
    });
  })
  .transform((content) => (Array.isArray(content) ? content.map((part: unknown) => (isImagePart(part) && typeof part.image_url === 'string' ? { ...part, image_url: { url: part.image_url } } : part)) : content));

function isImagePart(part: unknown): part is Record<string, unknown> {
  return isRecord(part) && part.type === 'image_url' && (isRecord(part.image_url) || typeof part.image_url === 'string');
}

/** The data: URL images of request messages. */
function inlineImageCount(messages: readonly { content?: unknown }[]): number {
  let count = 0;
  for (const { content } of messages) {
    if (!Array.isArray(content)) continue;
    for (const part of content) {
      const url = isImagePart(part) ? imagePartUrl(part) : undefined;
      if (typeof url === 'string' && isDataUrl(url)) count += 1;
    }
  }
  return count;
}

/** Request messages, with their inline images bounded in number (MAX_INLINE_IMAGES_PER_REQUEST). */
const messages = () =>
  z
    .array(message, { error: 'messages is not array' })
    .max(1000)
    .superRefine((list, context) => {
      if (inlineImageCount(list) > MAX_INLINE_IMAGES_PER_REQUEST) {
        context.addIssue({ code: 'custom', message: `at most ${MAX_INLINE_IMAGES_PER_REQUEST} images may be sent inline (data: URLs) in one request; send the others as links or upload them` });
      }
    })
    .default([]);

const message = z
  .object({
    // OpenAI's newer SDKs name the system role `developer` for some models.
    role: z.enum(['system', 'developer', 'user', 'assistant', 'tool', 'function']).transform((role) => (role === 'developer' ? 'system' : role)),
    content: messageContent.optional(),
    dataId: nullish(z.string().max(100)),
    interactive: interactive.optional(),
    tool_calls: nullish(z.array(toolCall)),
    tool_call_id: nullish(z.string()),
    function_call: nullish(z.object({ name: nullish(z.string()), arguments: nullish(z.string()) })),
    name: nullish(z.string()),
  })
  .loose();

const chatId = z.string().max(250, 'chatId must be under 250 characters');

/**
 * An app id that may be left out, where an empty one is left out too: templates send the field
 * always, and the web client's share page asks for its histories before its init answered the app.
 */
const optionalAppId = z.union([z.literal(''), zObjectId]).nullish().transform((value) => value || undefined);
/** Stored with the chat and read back by each of its turns: bounded (infra/zod.ts MAX_FREE_FORM_KEYS). */
const variables = zFreeFormRecord().default({});
/** Completions: a numeric chatId is cast to text, null or empty means stateless (as the reference). */
const completionsChatId = z
  .union([chatId, z.number().finite().transform(String)], { error: 'chatId must be a string' })
  .nullish()
  .transform((value) => value || undefined);

/** Share and team params accepted by chat endpoints (read by the auth resolvers). */
const outLinkParams = {
  shareId: z.string().optional(),
  outLinkUid: z.string().optional(),
  teamId: z.string().optional(),
  teamToken: z.string().optional(),
};

export const completionsSchema = z
  .object({
    messages: messages(),
    chatId: completionsChatId,
    // An API key names its own app anyway.
    appId: optionalAppId,
    variables: zFreeFormRecord().nullish().transform((value) => value ?? {}),
    detail: lenientBool,
    stream: lenientBool,
    // An empty id is absent: the server makes one.
    responseChatItemId: z.string().max(100).nullish().transform((value) => value || undefined),
    /** 4.8.13: merged into chat.metadata. */
    metadata: nullish(zFreeFormRecord()),
    /** 4.8.13: the log user of API/session chats (stored as outLinkUid). */
    customUid: z.string().max(200).nullish().transform((value) => value || undefined),
    /** OpenAI's: `include_usage` adds a last chunk with the turn's tokens to a stream. */
    stream_options: nullish(z.object({ include_usage: lenientBool }).loose()),
    ...outLinkParams,
  })
  // Other OpenAI fields (model, temperature, tools, tool_choice, user, n, seed …) are accepted
  // and ignored: the app's workflow decides them.
  .loose();

export const chatTestSchema = z.object({
  messages: messages(),
  nodes: zRunNodes,
  edges: zEdges,
  variables,
  appId: zObjectId,
  appName: z.string().max(300).optional(),
  chatConfig: zFreeFormRecord(MAX_CHAT_CONFIG_KEYS).optional(),
});

export const debugSchema = z.object({
  nodes: zRunNodes,
  edges: zEdges,
  variables,
  appId: zObjectId,
});

export const initSchema = z.object({ appId: optionalAppId, chatId: chatId.optional(), loadCustomFeedbacks: zBoolLike.optional() });
export const teamInitSchema = z.object({ appId: zObjectId, chatId: chatId.optional(), teamId: zObjectId, teamToken: z.string().min(1) });

export const historiesSchema = z.object({ appId: optionalAppId, ...outLinkParams });
export const updateHistorySchema = z.object({
  appId: zObjectId,
  chatId: chatId.min(1),
  title: z.string().max(300).optional(),
  customTitle: z.string().max(300).optional(),
  top: zBoolLike.optional(),
  ...outLinkParams,
});
export const chatRefSchema = z.object({ appId: zObjectId, chatId: chatId.min(1), ...outLinkParams });
export const clearHistoriesSchema = z.object({ appId: optionalAppId, ...outLinkParams });
export const itemDeleteSchema = z.object({ appId: zObjectId, chatId: chatId.optional(), contentId: z.string().max(100).optional(), ...outLinkParams });
export const resDataSchema = z.object({ appId: optionalAppId, chatId: chatId.optional(), dataId: z.string().max(100).optional(), ...outLinkParams });

export const feedbackSchema = z.object({
  appId: zObjectId,
  chatId: chatId.min(1),
  chatItemId: z.string().max(100).optional(),
  dataId: z.string().max(100).optional(),
  userGoodFeedback: z.string().max(2000).optional(),
  userBadFeedback: z.string().max(2000).optional(),
  ...outLinkParams,
});
/**
 * The logs page's annotation. 4.8.10 names the chat item `chatItemId` and the dataset entry
 * `dataId`; 4.8.12 renames them `dataId` and `feedbackDataId`. Both namings are read.
 */
export const adminFeedbackSchema = z
  .object({
    appId: zObjectId,
    chatId: chatId.min(1),
    chatItemId: z.string().max(100).optional(),
    dataId: z.string().max(100).optional(),
    feedbackDataId: z.string().max(100).optional(),
    datasetId: zObjectId,
    collectionId: zObjectId.optional(),
    q: z.string().min(1, 'missing parameter').max(100_000),
    a: z.string().max(100_000).optional(),
  })
  .transform((input, context) => {
    const renamed = input.feedbackDataId !== undefined;
    const chatItemId = renamed ? input.dataId : input.chatItemId;
    const feedbackDataId = renamed ? input.feedbackDataId : input.dataId;
    if (!chatItemId) {
      context.addIssue({ code: 'custom', path: [renamed ? 'dataId' : 'chatItemId'], message: 'missing parameter (the chat item id)' });
      return z.NEVER;
    }
    if (!isObjectIdHex(feedbackDataId)) {
      context.addIssue({ code: 'custom', path: [renamed ? 'feedbackDataId' : 'dataId'], message: 'missing parameter (the id of the dataset entry, 24 hex characters)' });
      return z.NEVER;
    }
    return { appId: input.appId, chatId: input.chatId, chatItemId, feedbackDataId, datasetId: input.datasetId, collectionId: input.collectionId, q: input.q, a: input.a };
  });

export const closeCustomSchema = z.object({
  appId: zObjectId,
  chatId: chatId.min(1),
  chatItemId: z.string().max(100).optional(),
  dataId: z.string().max(100).optional(),
  index: zIntLike.pipe(z.number().int().min(0)),
});

export const guideCountSchema = z.object({ appId: optionalAppId });
export const guideListSchema = z.object({
  appId: zObjectId,
  current: zPageNum,
  pageSize: zPageSize(30, 10),
  offset: zOffset.optional(),
  searchKey: zSearchText,
});
export const guideQuerySchema = z.object({ appId: zObjectId, searchKey: z.string().max(200).default(''), ...outLinkParams });
export const guideCreateSchema = z.object({ appId: zObjectId, textList: z.array(z.string().trim().min(1).max(500)).min(1).max(1000) });
export const guideUpdateSchema = z.object({ appId: zObjectId, dataId: zObjectId, text: z.string().trim().min(1).max(500) });
export const guideDeleteSchema = z.object({ appId: zObjectId, dataIdList: z.array(zObjectId).max(1000) });
export const guideDeleteAllSchema = z.object({ appId: zObjectId });

/** One chat window of `core/chat/getHistories`, fields in the order the service writes them. */
export const historiesResponse = z.array(
  z.object({
    chatId: z.string(),
    updateTime: z.date(),
    appId: z.string(),
    customTitle: z.string().optional(),
    title: z.string(),
    top: z.boolean().optional(),
  }),
);
