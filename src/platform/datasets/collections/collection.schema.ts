import { z } from 'zod';
import { holdsMoreKeysThan, MAX_FREE_FORM_KEYS, withKeyLimit, zBoolLike, zDate, zHttpUrl, zIntLike, zName, zObjectId, zPageNum, zPageSize, zParentId, zSearchText } from '../../../infra/zod.js';
import { COLLECTION_TYPES, TRAINING_MODES } from './collection.repo.js';

/**
 * The smallest chunk size accepted: the minimum of FastGPT 4.8.10's import page in chunk mode
 * (4000 in Q&A mode). Smaller sizes only multiply the work: split at 1 character, a 10 MB text
 * took 8.1 s (7.8 s blocking the event loop, +277 MB) and a 900 KB create/text 1.6 s (+343 MB).
 */
export const MIN_CHUNK_SIZE = 100;
/** The reference refuses chunk sizes above 30000. */
export const MAX_CHUNK_SIZE = 30000;
export const zChunkSize = zIntLike.pipe(
  z.number().int().min(MIN_CHUNK_SIZE, `must be at least ${MIN_CHUNK_SIZE}`).max(MAX_CHUNK_SIZE, `must be at most ${MAX_CHUNK_SIZE}`),
);

/** A collection's stored chunk size as splitting uses it: collections stored before the minimum are split at it (a link sync). */
export const usableChunkSize = (stored: number | undefined): number => Math.min(MAX_CHUNK_SIZE, Math.max(MIN_CHUNK_SIZE, stored || 512));

/**
 * User data: any keys (stored as {k, v} pairs, so `.` and `$` are fine), any JSON values, up to
 * MAX_FREE_FORM_KEYS keys at all levels (each collection list page reads it back).
 */
const zMetadata = withKeyLimit(
  z.record(
    z.string().refine((key) => !key.includes('\u0000'), 'metadata keys must not contain NUL characters'),
    z.unknown(),
  ),
);

export const chunkSettingsSchema = z.object({
  trainingType: z.enum(TRAINING_MODES).default('chunk'),
  chunkSize: zChunkSize.default(512),
  chunkSplitter: z.string().max(100).optional(),
  qaPrompt: z.string().max(5000).optional(),
});
export type ChunkSettings = z.infer<typeof chunkSettingsSchema>;

const common = chunkSettingsSchema.extend({
  datasetId: zObjectId,
  parentId: zParentId.optional(),
  metadata: zMetadata.optional(),
  tags: z.array(z.string().max(100)).max(50).optional(),
});

/**
 * collection/create: besides the common fields, the source a client records for a collection it
 * fills itself (pushData after create): an uploaded file of the team, a web link, an external
 * file (read through the dataset's externalReadUrl), and the text's length and hash.
 */
export const createCollectionSchema = common.extend({
  name: zName,
  type: z.enum(COLLECTION_TYPES).default('virtual'),
  fileId: zObjectId.optional(),
  rawLink: zHttpUrl.optional(),
  externalFileId: z.string().trim().min(1).max(500).optional(),
  externalFileUrl: zHttpUrl.optional(),
  rawTextLength: zIntLike.pipe(z.number().int().min(0)).optional(),
  hashRawText: z.string().max(200).optional(),
  createTime: zDate.optional(),
});

export const createTextSchema = common.extend({ name: zName, text: z.string().max(10 * 1024 * 1024) });
/** A link's metadata may name the part of the page to read (`webPageSelector`, a CSS selector). */
export const createLinkSchema = common.extend({
  link: z.string().url().max(2000),
  metadata: zMetadata.and(z.object({ webPageSelector: z.string().max(1000).optional() }).loose()).optional(),
});
export const createFileIdSchema = common.extend({ fileId: zObjectId });
export const createCsvSchema = z.object({ datasetId: zObjectId, parentId: zParentId.optional(), fileId: zObjectId, metadata: zMetadata.optional() });
/**
 * The `data` form field of create/localFile: the common fields, plus the stored file's metadata
 * (`fileMetadata`) and the collection's (`collectionMetadata`, over `metadata`).
 */
export const localFileDataSchema = common
  .extend({ fileMetadata: zMetadata.optional(), collectionMetadata: zMetadata.optional() })
  // The collection stores the two merged: they are bounded together.
  .refine((data) => !holdsMoreKeysThan({ ...data.metadata, ...data.collectionMetadata }, MAX_FREE_FORM_KEYS), {
    path: ['collectionMetadata'],
    message: `more than ${MAX_FREE_FORM_KEYS} keys with those of 'metadata' (counted at every level of nesting)`,
  });

const listFilters = {
  datasetId: zObjectId,
  parentId: zParentId.optional(),
  // The reference strips single quotes from the search text.
  searchText: zSearchText.transform((text) => text?.replace(/'/g, '') || undefined),
  selectFolder: zBoolLike.optional(),
  filterTags: z.union([z.array(z.string().max(100)).max(100), z.string().max(100).transform((tag) => [tag])]).optional(),
  simple: zBoolLike.optional(),
};

export const listCollectionsSchema = z.object({ ...listFilters, pageNum: zPageNum, pageSize: zPageSize() });
export const scrollCollectionsSchema = z.object({ ...listFilters, current: zPageNum, pageSize: zPageSize() });

export const collectionIdSchema = z.object({ collectionId: zObjectId });
export const idSchema = z.object({ id: zObjectId });
export const pathsSchema = z.object({ parentId: zParentId.optional() });

export const updateCollectionSchema = z.object({
  id: zObjectId,
  parentId: zParentId.optional(),
  name: zName.optional(),
  tags: z.array(z.string().max(100)).max(50).optional(),
  forbid: zBoolLike.optional(),
});
