import { type Db, ObjectId } from 'mongodb';
import type { IndexDeclaration } from '../../infra/mongo.js';

export type UsageSource = 'fastgpt' | 'api' | 'shareLink' | 'training' | 'cronJob' | 'share' | 'wecom' | 'feishu' | 'official_account';

export interface UsageItem {
  moduleName: string;
  amount: number;
  model?: string;
  tokens?: number;
  charsLength?: number;
  duration?: number;
}

/** A `usages` document (reference names). FerretDB has no TTL index; records are kept. */
export interface UsageDoc {
  _id: ObjectId;
  teamId: ObjectId;
  tmbId: ObjectId;
  source: UsageSource;
  appName: string;
  appId?: ObjectId;
  pluginId?: ObjectId;
  time: Date;
  totalPoints: number;
  list: UsageItem[];
}

export const USAGE_INDEXES: IndexDeclaration[] = [{ collection: 'usages', key: { teamId: 1, tmbId: 1, source: 1, time: -1 } }];

export function createUsageRepo(db: Db) {
  const usages = db.collection<UsageDoc>('usages');
  return {
    async insert(doc: Omit<UsageDoc, '_id' | 'time'> & { time?: Date }): Promise<UsageDoc> {
      const full: UsageDoc = { _id: new ObjectId(), time: new Date(), ...doc };
      await usages.insertOne(full);
      return full;
    },
    findInTeam: (id: ObjectId, teamId: ObjectId) => usages.findOne({ _id: id, teamId }),
  };
}

export type UsageRepo = ReturnType<typeof createUsageRepo>;
