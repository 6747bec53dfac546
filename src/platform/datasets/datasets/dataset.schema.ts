import { z } from 'zod';
import { zHttpUrl, zIntLike, zName, zObjectId, zParentId, zSearchText } from '../../../infra/zod.js';
import { DATASET_TYPES } from './dataset.repo.js';

const zModelName = z.string().trim().min(1).max(200);

export const createDatasetSchema = z.object({
  parentId: zParentId.optional(),
  type: z.enum(DATASET_TYPES).optional(),
  name: zName,
  intro: z.string().max(5000).optional(),
  avatar: z.string().max(2000).optional(),
  vectorModel: zModelName.optional(),
  agentModel: zModelName.optional(),
});
export type CreateDatasetInput = z.infer<typeof createDatasetSchema>;

export const createFolderSchema = z.object({
  parentId: zParentId.optional(),
  name: zName,
  intro: z.string().max(5000).optional(),
});

export const listDatasetsSchema = z.object({
  parentId: zParentId.optional(),
  type: z.union([z.enum(DATASET_TYPES), z.array(z.enum(DATASET_TYPES))]).optional(),
  searchKey: zSearchText,
});

export const idSchema = z.object({ id: zObjectId });
export const datasetIdSchema = z.object({ datasetId: zObjectId });
export const pathsSchema = z.object({ parentId: zParentId.optional() });

export const updateDatasetSchema = z.object({
  id: zObjectId,
  parentId: zParentId.optional(),
  name: zName.optional(),
  avatar: z.string().max(2000).optional(),
  intro: z.string().max(5000).optional(),
  // The web client sends the whole LLM model object; only its id is stored.
  agentModel: z.union([zModelName, z.object({ model: zModelName }).loose()]).optional(),
  status: z.enum(['active', 'syncing']).optional(),
  websiteConfig: z.object({ url: zHttpUrl, selector: z.string().max(500).default('body') }).optional(),
  // Handed to every reader by collection/read, which the web client opens: http(s) only.
  externalReadUrl: z.union([z.literal(''), zHttpUrl]).optional(),
  defaultPermission: zIntLike.optional(),
});
export type UpdateDatasetInput = z.infer<typeof updateDatasetSchema>;
