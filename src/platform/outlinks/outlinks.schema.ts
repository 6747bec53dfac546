import { z } from 'zod';
import { zBoolLike, zDate, zHttpUrl, zName, zObjectId } from '../../infra/zod.js';

export const OUTLINK_TYPES = ['share', 'iframe', 'apikey', 'feishu', 'wecom', 'official_account'] as const;

const limitSchema = z
  .object({
    maxUsagePoints: z.number().min(-1).optional(),
    expiredTime: z.union([zDate, z.null()]).optional(),
    QPM: z.number().int().min(0).max(100000).optional(),
    hookUrl: z.union([zHttpUrl, z.literal('')]).optional(),
  })
  .strict();

/** Channel settings; only the reference's fields plus `apiBaseUrl` (where replies are sent). */
const channelSchema = z
  .object({
    appId: z.string().max(200).optional(),
    appSecret: z.string().max(500).optional(),
    encryptKey: z.string().max(500).optional(),
    verificationToken: z.string().max(500).optional(),
    AgentId: z.union([z.string().max(100), z.number().int()]).optional(),
    CorpId: z.string().max(200).optional(),
    SuiteSecret: z.string().max(500).optional(),
    CallbackToken: z.string().max(500).optional(),
    // WeCom's EncodingAESKey: 43 base64 characters (32 bytes once a '=' is added).
    CallbackEncodingAesKey: z.string().regex(/^[A-Za-z0-9+/]{43}$/, 'must be the 43-character EncodingAESKey').optional(),
    secret: z.string().max(500).optional(),
    isVerified: z.boolean().optional(),
    timeoutReply: z.string().max(2000).optional(),
    apiBaseUrl: zHttpUrl.optional(),
  })
  .strict();

export const createOutLinkSchema = z.object({
  appId: zObjectId,
  type: z.enum(OUTLINK_TYPES),
  name: zName,
  responseDetail: z.boolean().optional(),
  limit: limitSchema.optional(),
  app: channelSchema.optional(),
  immediateResponse: z.string().max(2000).optional(),
  defaultResponse: z.string().max(2000).optional(),
});

export const listOutLinkSchema = z.object({ appId: zObjectId, type: z.enum(OUTLINK_TYPES) });

export const updateOutLinkSchema = z.object({
  _id: zObjectId,
  name: zName.optional(),
  responseDetail: zBoolLike.optional(),
  limit: limitSchema.optional(),
  app: channelSchema.optional(),
  immediateResponse: z.string().max(2000).optional(),
  defaultResponse: z.string().max(2000).optional(),
});

export const deleteOutLinkSchema = z.object({ id: zObjectId });

export const outLinkInitSchema = z.object({
  shareId: z.string().min(1).max(100),
  outLinkUid: z.string().min(1).max(500),
  chatId: z.string().max(250).optional(),
});
