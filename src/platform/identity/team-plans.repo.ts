import { type Db, ObjectId } from 'mongodb';
import type { IndexDeclaration } from '../../infra/mongo.js';
import { oid } from '../../infra/plain-record.js';
import type { TeamPlanLimits } from './team-limits-types.js';

/** Per-team overrides of the PLAN_* defaults; a team without a document has the defaults. */
interface TeamPlanDoc extends Partial<TeamPlanLimits> {
  _id: ObjectId;
  teamId: ObjectId;
  updateTime: Date;
}

export const TEAM_PLAN_INDEXES: IndexDeclaration[] = [{ collection: 'team_plans', key: { teamId: 1 }, options: { unique: true } }];

type StampField = 'lastExportDatasetTime' | 'lastWebsiteSyncTime';

export function createTeamPlansRepo(db: Db) {
  const plans = db.collection<TeamPlanDoc>('team_plans');
  const teams = db.collection<{ _id: ObjectId; limit?: Partial<Record<StampField, Date>> }>('teams');

  return {
    /** The team's overrides; null for a team on the defaults. */
    async findPlan(teamId: string): Promise<Partial<TeamPlanLimits> | null> {
      const plan = await plans.findOne({ teamId: oid(teamId) });
      if (!plan) return null;
      const { _id: _planId, teamId: _teamId, updateTime: _updateTime, ...limits } = plan;
      return limits;
    },
    async savePlan(teamId: string, limits: Partial<TeamPlanLimits>): Promise<void> {
      await plans.updateOne({ teamId: oid(teamId) }, { $set: { ...limits, updateTime: new Date() }, $setOnInsert: { _id: new ObjectId() } }, { upsert: true });
    },
    async lastStamp(teamId: string, field: StampField): Promise<Date | undefined> {
      const team = await teams.findOne({ _id: oid(teamId) }, { projection: { limit: 1 } });
      return team?.limit?.[field];
    },
    /** Stamps `now` only when the previous stamp is absent or not after `notAfter`: atomic check-and-record. */
    async stampIfIdle(teamId: string, field: StampField, notAfter: Date, now: Date): Promise<boolean> {
      const path = `limit.${field}`;
      const result = await teams.updateOne(
        { _id: oid(teamId), $or: [{ [path]: { $exists: false } }, { [path]: null }, { [path]: { $lte: notAfter } }] },
        { $set: { [path]: now } },
      );
      return result.matchedCount === 1;
    },
  };
}

export type TeamPlansRepo = ReturnType<typeof createTeamPlansRepo>;
