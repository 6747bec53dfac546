import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { zObjectId } from '../../../infra/zod.js';
import { definePlatformRoute } from '../../define-route.js';
import type { DatasetsContext } from '../context.js';
import { startRebuild } from './rebuild.js';

const tags = ['Dataset training'];
const USER = ['session', 'apiKey'] as const;

export function registerTrainingRoutes(app: FastifyInstance, ctx: DatasetsContext): void {
  const { trainings, data } = ctx.repos;

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
      await startRebuild(ctx, { teamId: auth.teamId, tmbId: auth.tmbId, datasetId: dataset._id }, ctx.embedders().vectorModel(input.vectorModel));
      return {};
    },
  });
}
