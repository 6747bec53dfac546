import type { Config } from '../../config.js';
import { Errors } from '../../infra/errors.js';
import { requireHexId } from '../../infra/mongo.js';
import type { TeamCountersRepo } from './team-counters.repo.js';
import type { PlanUsageKind, TeamLimits, TeamPlanLimits } from './team-limits-types.js';
import type { TeamPlansRepo } from './team-plans.repo.js';

type PlanEnv = Pick<Config, 'PLAN_MAX_APPS' | 'PLAN_MAX_DATASETS' | 'PLAN_MAX_DATASET_SIZE' | 'PLAN_EXPORT_INTERVAL_MINUTES' | 'PLAN_WEB_SYNC_INTERVAL_MINUTES'>;

export function defaultPlanLimits(config: PlanEnv): TeamPlanLimits {
  return {
    maxApps: config.PLAN_MAX_APPS,
    maxDatasets: config.PLAN_MAX_DATASETS,
    maxDatasetSize: config.PLAN_MAX_DATASET_SIZE,
    exportIntervalMinutes: config.PLAN_EXPORT_INTERVAL_MINUTES,
    webSyncIntervalMinutes: config.PLAN_WEB_SYNC_INTERVAL_MINUTES,
  };
}

const LIMIT_KEYS = ['maxApps', 'maxDatasets', 'maxDatasetSize', 'exportIntervalMinutes', 'webSyncIntervalMinutes'] as const;

/** The one place plan limits are decided (apps, datasets, vectors, export and web-sync intervals). */
export function createTeamLimits(deps: {
  config: PlanEnv;
  plans: TeamPlansRepo;
  counters: TeamCountersRepo;
  now: () => number;
  /** Told when the vector counter could not be changed or checked (it drifts until its next check). */
  onCounterError?: (error: unknown) => void;
}): TeamLimits {
  const { plans, counters } = deps;
  const usageCounts = new Map<PlanUsageKind, (teamId: string) => Promise<number>>();
  /** A usage no module counts is 0 (a deployment without that module). */
  const countUsage = (kind: PlanUsageKind, teamId: string) => {
    requireHexId(teamId, 'teamId');
    return usageCounts.get(kind)?.(teamId) ?? Promise.resolve(0);
  };

  const counterError = (error: unknown) => deps.onCounterError?.(error);
  const countVectors = (teamId: string) => countUsage('vectors', teamId);
  /** Stored vectors, from the team's counter (the store's own count is a scan of every vector on FerretDB). */
  const usedVectors = (teamId: string) => counters.read('vectors', requireHexId(teamId, 'teamId'), new Date(deps.now()), () => countVectors(teamId), counterError);

  async function getLimits(teamId: string): Promise<TeamPlanLimits> {
    const limits = defaultPlanLimits(deps.config);
    const plan = await plans.findPlan(requireHexId(teamId, 'teamId'));
    for (const key of LIMIT_KEYS) {
      const value = plan?.[key];
      if (typeof value === 'number' && Number.isFinite(value) && value >= 0) limits[key] = value;
    }
    return limits;
  }

  async function checkInterval(teamId: string, field: 'lastExportDatasetTime' | 'lastWebsiteSyncTime', minutes: number, record: boolean) {
    const id = requireHexId(teamId, 'teamId');
    const now = deps.now();
    const notAfter = new Date(now - minutes * 60_000);
    let last: Date | undefined;
    if (record) {
      if (await plans.stampIfIdle(id, field, notAfter, new Date(now))) return;
      last = await plans.lastStamp(id, field);
      if (!last) throw Errors.notFound(`Team ${teamId} not found`);
    } else {
      last = await plans.lastStamp(id, field);
      if (!last || last <= notAfter) return;
    }
    const retryAfter = last ? Math.max(1, Math.ceil((last.getTime() + minutes * 60_000 - now) / 1000)) : 1;
    if (field === 'lastExportDatasetTime') throw Errors.tooManyRequest(`Each team can export a dataset once every ${minutes} minutes`, retryAfter);
    throw Errors.websiteSyncTooSoon(`Each team can run a website sync once every ${minutes} minutes`, retryAfter);
  }

  return {
    countUsing(kind, count) {
      usageCounts.set(kind, count);
    },
    getLimits,
    async assertAppAmount(teamId, adding = 1) {
      const [limits, count] = await Promise.all([getLimits(teamId), countUsage('apps', teamId)]);
      if (count + adding > limits.maxApps) throw Errors.appAmountNotEnough(`The team plan allows at most ${limits.maxApps} apps (the team has ${count})`);
    },
    async assertDatasetAmount(teamId, adding = 1) {
      const [limits, count] = await Promise.all([getLimits(teamId), countUsage('datasets', teamId)]);
      if (count + adding > limits.maxDatasets) throw Errors.datasetAmountNotEnough(`The team plan allows at most ${limits.maxDatasets} datasets (the team has ${count})`);
    },
    async reserveApps(teamId, adding) {
      if (adding <= 0) return;
      const { maxApps } = await getLimits(teamId);
      const refusedAt = await counters.reserve('apps', teamId, adding, maxApps, new Date(deps.now()), () => countUsage('apps', teamId));
      if (refusedAt !== undefined) throw Errors.appAmountNotEnough(`The team plan allows at most ${maxApps} apps (the team has ${refusedAt})`);
    },
    releaseApps: (teamId, count) => counters.release('apps', teamId, count),
    async reserveDatasets(teamId, adding) {
      if (adding <= 0) return;
      const { maxDatasets } = await getLimits(teamId);
      const refusedAt = await counters.reserve('datasets', teamId, adding, maxDatasets, new Date(deps.now()), () => countUsage('datasets', teamId));
      if (refusedAt !== undefined) throw Errors.datasetAmountNotEnough(`The team plan allows at most ${maxDatasets} datasets (the team has ${refusedAt})`);
    },
    releaseDatasets: (teamId, count) => counters.release('datasets', teamId, count),
    async assertDatasetSize(teamId, addingVectors) {
      const [limits, counted] = await Promise.all([getLimits(teamId), usedVectors(teamId)]);
      if (counted + addingVectors <= limits.maxDatasetSize) return;
      // Before refusing, the real count if the counter has been quiet for a while (drift after a crash).
      const used = await counters.correct('vectors', teamId, new Date(deps.now()), () => countVectors(teamId));
      if (used + addingVectors > limits.maxDatasetSize) {
        throw Errors.datasetSizeNotEnough(`The team's dataset capacity is ${limits.maxDatasetSize} vectors, ${used} are used and ${addingVectors} more were requested`);
      }
    },
    vectorsStored(teamId, delta) {
      return counters.add('vectors', teamId, delta).catch(counterError);
    },
    async assertAndRecordExport(teamId) {
      await checkInterval(teamId, 'lastExportDatasetTime', (await getLimits(teamId)).exportIntervalMinutes, true);
    },
    async assertAndRecordWebSync(teamId) {
      await checkInterval(teamId, 'lastWebsiteSyncTime', (await getLimits(teamId)).webSyncIntervalMinutes, true);
    },
    async checkExport(teamId) {
      await checkInterval(teamId, 'lastExportDatasetTime', (await getLimits(teamId)).exportIntervalMinutes, false);
    },
    async checkWebSync(teamId) {
      await checkInterval(teamId, 'lastWebsiteSyncTime', (await getLimits(teamId)).webSyncIntervalMinutes, false);
    },
    usedDatasetSize: usedVectors,
    async setPlan(teamId, limits) {
      const clean = Object.fromEntries(LIMIT_KEYS.filter((key) => typeof limits[key] === 'number').map((key) => [key, limits[key]]));
      await plans.savePlan(requireHexId(teamId, 'teamId'), clean);
      return getLimits(teamId);
    },
  };
}
