import { z } from 'zod';
import { zDate, zIntLike, zName, zObjectId } from '../../infra/zod.js';

/** `maxUsagePoints` -1 is unlimited, as the reference. Unknown fields are ignored (client forms send extras). */
export const apiKeyLimitSchema = z.object({
  expiredTime: zDate.nullable().optional(),
  maxUsagePoints: zIntLike.pipe(z.number().int().min(-1, 'must be -1 (unlimited) or more')).default(-1),
});

const appId = z.union([zObjectId, z.literal('')]).optional().transform((value) => value || undefined);

export const apiKeyCreateSchema = z.object({
  appId,
  name: zName.default('Api Key'),
  limit: apiKeyLimitSchema.optional(),
});

export const apiKeyListSchema = z.object({ appId });

export const apiKeyUpdateSchema = z.object({
  _id: zObjectId,
  // The reference skips an empty name (keeps the old one) rather than refusing it.
  name: z.union([z.literal(''), zName]).optional().transform((name) => name || undefined),
  limit: apiKeyLimitSchema.optional(),
  // Sent by the reference client and ignored: a key's app binding never changes.
  appId: z.string().optional(),
});

export const apiKeyDeleteSchema = z.object({ id: zObjectId });
