/**
 * The one service through which every module enforces a team's plan limits. Implemented by
 * the identity module from the per-team plan document and the PLAN_* defaults.
 */
export interface TeamPlanLimits {
  maxApps: number;
  maxDatasets: number;
  /** Dataset size in stored vectors (data items' indexes). */
  maxDatasetSize: number;
  exportIntervalMinutes: number;
  webSyncIntervalMinutes: number;
}

/** What the plan counts; each is counted by the module that owns the documents. */
export type PlanUsageKind = 'apps' | 'datasets' | 'vectors';

export interface TeamLimits {
  /** Registers the owner's count of a plan usage (apps by the apps module, datasets and vectors by datasets). */
  countUsing(kind: PlanUsageKind, count: (teamId: string) => Promise<number>): void;
  getLimits(teamId: string): Promise<TeamPlanLimits>;
  /** Throws appAmountNotEnough when the team cannot have `adding` more apps. */
  assertAppAmount(teamId: string, adding?: number): Promise<void>;
  /** Throws datasetAmountNotEnough when the team cannot have `adding` more datasets. */
  assertDatasetAmount(teamId: string, adding?: number): Promise<void>;
  /**
   * Reserves room for `adding` apps in one atomic step (parallel creates cannot pass the limit
   * together) or throws appAmountNotEnough. The caller releases the room if its insert fails.
   */
  reserveApps(teamId: string, adding: number): Promise<void>;
  /** Gives room back: deleted apps, or a failed insert after its reservation. */
  releaseApps(teamId: string, count: number): Promise<void>;
  /** As reserveApps, for datasets (datasetAmountNotEnough). */
  reserveDatasets(teamId: string, adding: number): Promise<void>;
  releaseDatasets(teamId: string, count: number): Promise<void>;
  /** Throws datasetSizeNotEnough when `addingVectors` more would exceed the plan. */
  assertDatasetSize(teamId: string, addingVectors: number): Promise<void>;
  /** Throws (429) when the last export of the team was less than the interval ago; records this one. */
  assertAndRecordExport(teamId: string): Promise<void>;
  /** Throws websiteSyncNotEnough when a web sync ran less than the interval ago; records this one. */
  assertAndRecordWebSync(teamId: string): Promise<void>;
  /** The same checks without recording (the reference's limit endpoints only check). */
  checkExport(teamId: string): Promise<void>;
  checkWebSync(teamId: string): Promise<void>;
  /**
   * Counts vectors the store wrote (+) or deleted (-) for the team; never throws (a failure is
   * reported and the counter is corrected at its next check).
   */
  vectorsStored(teamId: string, delta: number): Promise<void>;
  /** Stored vectors of the team (the dataset size the plan limits). */
  usedDatasetSize(teamId: string): Promise<number>;
  /** Overrides some limits for one team (the per-team plan document); the rest keep the defaults. */
  setPlan(teamId: string, limits: Partial<TeamPlanLimits>): Promise<TeamPlanLimits>;
}

declare module 'fastify' {
  interface FastifyInstance {
    teamLimits: TeamLimits;
  }
}
