import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { zIntLike, zObjectId } from '../../infra/zod.js';
import { definePlatformRoute } from '../define-route.js';
import { textHead } from '../../domain/text-cut.js';

const tags = ['teams, limits and usage'];

/** Team limit checks, plan status and training usage records. */
export async function teamRoutes(app: FastifyInstance): Promise<void> {
  // The datasets module's services exist before any route is registered.
  const datasets = app.datasets;
  const usages = app.identity.usage;

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/support/user/team/limit/datasetSizeLimit',
    auth: ['session'],
    input: z.object({ size: z.union([z.literal(''), zIntLike.pipe(z.number().int().min(0, 'must be 0 or more'))]).optional() }),
    summary: 'Checks that `size` more vectors fit in the team plan (datasetSizeNotEnough otherwise)',
    tags,
    handler: async ({ input, auth }) => {
      if (typeof input.size === 'number') await app.teamLimits.assertDatasetSize(auth.teamId, input.size);
      return null;
    },
  });

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/support/user/team/limit/exportDatasetLimit',
    auth: ['session'],
    input: z.object({ datasetId: zObjectId }),
    summary: 'Checks that the team may export a dataset now (write permission on the dataset; export interval)',
    tags,
    handler: async ({ input, auth }) => {
      await datasets.authorize(auth, input.datasetId, 'write');
      await app.teamLimits.checkExport(auth.teamId);
      return null;
    },
  });

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/support/user/team/limit/webSyncLimit',
    auth: ['session'],
    summary: 'Checks that the team may run a website sync now (web-sync interval)',
    tags,
    handler: async ({ auth }) => {
      await app.teamLimits.checkWebSync(auth.teamId);
      return null;
    },
  });

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/support/user/team/plan/getTeamPlanStatus',
    auth: ['session'],
    summary: "The team's plan status: points (unlimited: null), dataset capacity and use, and the plan limits",
    tags,
    handler: async ({ auth }) => {
      const [limits, usedDatasetSize] = await Promise.all([app.teamLimits.getLimits(auth.teamId), app.teamLimits.usedDatasetSize(auth.teamId)]);
      // No point billing here: totals are unlimited, which the reference serialises as null.
      return { totalPoints: null, usedPoints: null, datasetMaxSize: limits.maxDatasetSize, usedDatasetSize, limits };
    },
  });

  definePlatformRoute(app, {
    methods: ['POST', 'GET'],
    url: '/support/wallet/usage/createTrainingUsage',
    auth: ['session', 'apiKey'],
    // The reference takes any name (its default is ''); a long one is cut, not refused.
    input: z.object({ name: z.string().default('').transform((name) => textHead(name.trim(), 200)), datasetId: zObjectId }),
    summary: 'Creates a training usage record for a dataset (write permission); returns its id (billId)',
    tags,
    handler: async ({ input, auth }) => {
      const { dataset } = await datasets.authorize(auth, input.datasetId, 'write');
      const vectorName = app.models.vectorModelOrDefault(dataset.vectorModel).name;
      const llmName = app.models.llmModelOrDefault(dataset.agentModel)?.name ?? '';
      const usage = await usages.insert({
        teamId: auth.teamId,
        tmbId: auth.tmbId,
        appName: input.name,
        source: 'training',
        totalPoints: 0,
        list: [
          { moduleName: 'support.wallet.moduleName.index', model: vectorName, tokens: 0, amount: 0 },
          { moduleName: 'support.wallet.moduleName.qa', model: llmName, tokens: 0, amount: 0 },
          { moduleName: 'core.dataset.training.Auto mode', model: llmName, tokens: 0, amount: 0 },
        ],
      });
      return usage._id;
    },
  });
}
