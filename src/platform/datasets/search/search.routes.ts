import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { zBoolLike, zIntLike, zNumberLike, zObjectId } from '../../../infra/zod.js';
import { definePlatformRoute } from '../../define-route.js';
import type { DatasetsContext } from '../context.js';
import { createSearchTest } from './search-test.js';
import { searchTestResponse } from './search.schema.js';
import { SEARCH_MODES, type SearchService } from './search.service.js';

const EXPORT_MAX_ROWS = 50_000;

const searchSchema = z.object({
  datasetId: zObjectId,
  text: z.string().trim().min(1, 'must not be empty').max(10_000),
  // A token budget: above the cap it is clamped, as page sizes are.
  limit: zIntLike.pipe(z.number().int().min(1)).transform((limit) => Math.min(limit, 20_000)).default(1500),
  similarity: zNumberLike.pipe(z.number().min(0).max(1)).default(0),
  searchMode: z.enum(SEARCH_MODES).default('embedding'),
  usingReRank: zBoolLike.default(false),
  // Query extension runs only when a model is named (as the reference).
  datasetSearchUsingExtensionQuery: zBoolLike.default(true),
  datasetSearchExtensionModel: z.string().trim().max(200).optional(),
  datasetSearchExtensionBg: z.string().max(10_000).default(''),
});

const csvCell = (text: string) => `"${text.replace(/"/g, '""')}"`;

export function registerSearchRoutes(app: FastifyInstance, ctx: DatasetsContext, service: SearchService): void {
  const searchTest = createSearchTest(ctx, service);

  definePlatformRoute(app, {
    methods: ['POST', 'GET'],
    url: '/core/dataset/searchTest',
    auth: ['session', 'apiKey'],
    input: searchSchema,
    response: searchTestResponse,
    tags: ['Datasets'],
    summary: 'Search a dataset (embedding, fullTextRecall or mixedRecall; optional rerank)',
    handler: async ({ input, auth }) => {
      const started = performance.now();
      const result = await searchTest(auth, input);
      return { ...result, duration: `${((performance.now() - started) / 1000).toFixed(3)}s` };
    },
  });

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/dataset/exportAll',
    auth: ['session', 'apiKey'],
    input: z.object({ datasetId: zObjectId }),
    raw: true,
    tags: ['Datasets'],
    summary: 'Download the dataset (and its sub-datasets) as CSV: BOM, header index,content',
    handler: async ({ input, auth, reply }) => {
      const { dataset } = await ctx.auth.authDataset(auth, input.datasetId, 'write');
      await ctx.teamLimits.assertAndRecordExport(auth.teamId);
      const ids = await ctx.auth.permittedDatasets(auth, await ctx.repos.datasets.withDescendants(auth.teamId, dataset._id), 'write');
      const cursor = ctx.repos.data.exportCursor(auth.teamId, ids, EXPORT_MAX_ROWS);
      // Streamed from a cursor: memory stays flat whatever the dataset size.
      async function* rows() {
        yield '\uFEFFindex,content';
        for await (const row of cursor) yield `\n${csvCell(row.q)},${csvCell(row.a ?? '')}`;
      }
      return reply
        .header('content-type', 'text/csv; charset=utf-8;')
        .header('content-disposition', 'attachment; filename=dataset.csv; ')
        .header('x-content-type-options', 'nosniff')
        .send(Readable.from(rows()));
    },
  });
}
