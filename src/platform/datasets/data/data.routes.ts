import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { pageSkipLimit, zIntLike, zObjectId, zOffset, zPageNum, zPageSize, zSearchText } from '../../../infra/zod.js';
import { definePlatformRoute } from '../../define-route.js';
import { TRAINING_MODES } from '../collections/collection.repo.js';
import type { DatasetsContext } from '../context.js';
import { MAX_CUSTOM_INDEXES, MAX_INDEXES } from './data-indexes.js';
import { dataListResponse, dataListV2Response } from './data.schema.js';
import { createDataService } from './data.service.js';

const tags = ['Dataset data'];
const USER = ['session', 'apiKey'] as const;
const zText = z.string().max(100_000);
const zIndex = z.object({ text: zText, dataId: z.string().max(100).optional(), defaultIndex: z.boolean().optional() });

const pushSchema = z.object({
  collectionId: zObjectId,
  datasetId: zObjectId.optional(),
  data: z
    // An item with too many indexes is reported in `error` on its own, never refusing the batch.
    .array(z.object({ q: zText, a: zText.optional(), chunkIndex: zIntLike.optional(), indexes: z.array(zIndex).optional() }))
    .max(200, 'Data is too long, max 200'),
  trainingMode: z.enum(TRAINING_MODES).default('chunk'),
  prompt: z.string().max(5000).optional(),
  billId: z.string().max(100).optional(),
});

const zCustomIndexes = z.array(zIndex).max(MAX_CUSTOM_INDEXES, `at most ${MAX_CUSTOM_INDEXES} custom indexes`);
const insertSchema = z.object({ collectionId: zObjectId, datasetId: zObjectId.optional(), q: zText, a: zText.optional(), indexes: zCustomIndexes.optional() });
// The client sends every index back, the default one (and q's) included.
const updateSchema = z.object({ dataId: zObjectId, q: zText.optional(), a: zText.optional(), indexes: z.array(zIndex).max(MAX_INDEXES, `at most ${MAX_INDEXES} indexes`).optional() });
const listSchema = z.object({ collectionId: zObjectId, pageNum: zPageNum, pageSize: zPageSize(), searchText: zSearchText });
const listV2Schema = z.object({ collectionId: zObjectId, offset: zOffset.default(0), pageSize: zPageSize(), searchText: zSearchText });
const idSchema = z.object({ id: zObjectId });

export function registerDataRoutes(app: FastifyInstance, ctx: DatasetsContext): void {
  const service = createDataService(ctx);
  const base = { auth: USER, tags };
  const url = (path: string) => `/core/dataset/data${path}`;

  definePlatformRoute(app, { ...base, methods: ['POST', 'GET'], url: url('/pushData'), input: pushSchema, summary: 'Queue up to 200 items for training ({insertLen, overToken, repeat, error})', handler: ({ input, auth }) => service.pushData(auth, input) });
  definePlatformRoute(app, { ...base, methods: ['POST', 'GET'], url: url('/insertData'), input: insertSchema, summary: 'Insert one item now (embedded synchronously); returns its id', handler: ({ input, auth }) => service.insertData(auth, input) });
  definePlatformRoute(app, {
    ...base,
    methods: ['POST', 'GET'],
    url: url('/list'),
    input: listSchema,
    response: dataListResponse,
    summary: 'Paged data of a collection ({pageNum, pageSize, data, total})',
    handler: async ({ input, auth }) => {
      const { items, total } = await service.list(auth, { ...input, ...pageSkipLimit(input.pageNum, input.pageSize) });
      return { pageNum: input.pageNum, pageSize: input.pageSize, data: items, total };
    },
  });
  definePlatformRoute(app, {
    ...base,
    methods: ['POST', 'GET'],
    url: url('/v2/list'),
    input: listV2Schema,
    response: dataListV2Response,
    summary: 'Data of a collection by offset ({list, total})',
    handler: async ({ input, auth }) => {
      const { items, total } = await service.list(auth, { ...input, skip: input.offset, limit: input.pageSize });
      return { list: items, total };
    },
  });
  definePlatformRoute(app, { ...base, methods: ['GET', 'POST'], url: url('/detail'), input: idSchema, summary: 'One data item with its indexes and source', handler: ({ input, auth }) => service.detail(auth, input.id) });
  definePlatformRoute(app, { ...base, methods: ['GET', 'PUT', 'POST'], url: url('/update'), input: updateSchema, summary: 'Update q/a/indexes (changed indexes are re-embedded)', handler: ({ input, auth }) => service.update(auth, input) });
  definePlatformRoute(app, { ...base, methods: ['GET', 'DELETE', 'POST'], url: url('/delete'), input: idSchema, summary: 'Delete one data item and its vectors', handler: ({ input, auth }) => service.remove(auth, input.id) });
}
