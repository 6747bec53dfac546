import { queueNextRebuild } from './rebuild.js';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { Errors } from '../../../infra/errors.js';
import { zObjectId } from '../../../infra/zod.js';
import { definePlatformRoute } from '../../define-route.js';
import type { DatasetsContext } from '../context.js';

const tags = ['Dataset training'];
const USER = ['session', 'apiKey'] as const;
/** Rebuild items kept in flight; each finished one queues the next (as the reference's rebuild; docs/datasets.md). */
const REBUILD_IN_FLIGHT = 20;

export function registerTrainingRoutes(app: FastifyInstance, ctx: DatasetsContext): void {
  const { trainings, data, datasets } = ctx.repos;

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/dataset/training/getDatasetTrainingQueue',
    auth: USER,
    input: z.object({ datasetId: zObjectId }),
    tags,
    summary: 'Queue counts of a dataset, with the items that failed and why',
    handler: async ({ input, auth }) => {
      const { dataset } = await ctx.auth.authDataset(auth, input.datasetId, 'read');
      const [rebuildingCount, queued, failed] = await Promise.all([
        data.countRebuilding(auth.teamId, dataset._id),
        trainings.countedByCollection(auth.teamId, dataset._id),
        trainings.failedItems(auth.teamId, dataset._id),
      ]);
      return {
        rebuildingCount,
        trainingCount: [...queued.values()].reduce((sum, n) => sum + n, 0),
        failedItems: failed.map((item) => ({ _id: item._id, collectionId: item.collectionId, retryCount: item.retryCount, errorMsg: item.errorMsg })),
      };
    },
  });

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/dataset/training/getQueueLen',
    auth: USER,
    input: z.object({ vectorModel: z.string().max(200).optional(), agentModel: z.string().max(200).optional() }),
    tags,
    summary: 'System-wide queue lengths of a vector model and an agent model',
    handler: async ({ input }) => ({
      vectorTrainingCount: input.vectorModel ? await trainings.countLiveByModel(input.vectorModel) : 0,
      agentTrainingCount: input.agentModel ? await trainings.countLiveByModel(input.agentModel) : 0,
    }),
  });

  definePlatformRoute(app, {
    methods: ['POST', 'GET'],
    url: '/core/dataset/training/rebuildEmbedding',
    auth: USER,
    input: z.object({ datasetId: zObjectId, vectorModel: z.string().trim().min(1).max(200) }),
    tags,
    summary: "Switch the dataset's vector model and re-embed every item through the queue",
    handler: async ({ input, auth }) => {
      const { dataset } = await ctx.auth.authDataset(auth, input.datasetId, 'owner');
      const model = ctx.embedders().vectorModel(input.vectorModel);
      const [rebuilding, queued] = await Promise.all([data.countRebuilding(auth.teamId, dataset._id), trainings.countByDataset(auth.teamId, dataset._id)]);
      if (queued > 0) throw Errors.conflict('The dataset is training or rebuilding; try again when the queue is empty');
      // Flagged items with nothing queued: a rebuild stopped part-way (a failure between its steps).
      // It starts over: every item flagged again, so none keeps another model's vectors.
      if (rebuilding === 0 && model.model === dataset.vectorModel) throw Errors.missingParams(`Invalid field 'vectorModel': the dataset already uses ${model.model}`);
      // Flag first, then switch: each step can be done again by a retry.
      await data.markRebuilding(auth.teamId, dataset._id);
      await datasets.update(auth.teamId, dataset._id, { vectorModel: model.model });
      await ctx.searchIndex.switchModel(dataset._id, model.model);
      const item = { teamId: auth.teamId, tmbId: auth.tmbId, datasetId: dataset._id, billId: '', mode: 'chunk' as const, model: model.model, prompt: '', weight: model.weight ?? 0 };
      for (let i = 0; i < REBUILD_IN_FLIGHT; i++) if (!(await queueNextRebuild(ctx, item))) break;
      ctx.wakeWorker();
      return {};
    },
  });
}
