/** Usage (billing) records, written to this database. */
import { type Db, ObjectId } from 'mongodb';
import type { NodeUsage } from '../../domain/workflow/types.js';
import type { IndexDeclaration } from '../../infra/mongo.js';

export const USAGES = 'usages';
export const USAGE_INDEXES: IndexDeclaration[] = [{ collection: USAGES, key: { teamId: 1, time: -1 } }];

export interface UsageInput {
  teamId: string;
  tmbId: string;
  source: string;
  appName: string;
  appId?: string;
  list: NodeUsage[];
}

export function createUsageRepo(db: Db) {
  const usages = db.collection(USAGES);
  return {
    async record(input: UsageInput, now: Date): Promise<number> {
      const totalPoints = input.list.reduce((sum, item) => sum + (item.totalPoints || 0), 0);
      await usages.insertOne({
        _id: new ObjectId(),
        teamId: new ObjectId(input.teamId),
        tmbId: new ObjectId(input.tmbId),
        source: input.source,
        appName: input.appName,
        ...(input.appId ? { appId: new ObjectId(input.appId) } : {}),
        time: now,
        totalPoints,
        list: input.list.map((item) => ({ moduleName: item.moduleName, amount: item.totalPoints || 0, model: item.model, tokens: item.tokens })),
      });
      return totalPoints;
    },
  };
}

export type UsageRepo = ReturnType<typeof createUsageRepo>;
