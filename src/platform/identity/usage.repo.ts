import { type Db, ObjectId } from 'mongodb';
import type { NodeUsage } from '../../domain/workflow/types.js';
import { createGroupedInserter } from '../../infra/grouped-insert.js';
import type { IndexDeclaration } from '../../infra/mongo.js';
import { oid, type Plain, plain, plainOrNull } from '../../infra/plain-record.js';

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
interface UsageDoc {
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

/** A usage record as the repository returns it: ids are hex strings. */
export type UsageRecord = Plain<UsageDoc>;

export const USAGES = 'usages';
export const USAGE_INDEXES: IndexDeclaration[] = [
  { collection: USAGES, key: { teamId: 1, time: -1 } },
  { collection: USAGES, key: { teamId: 1, tmbId: 1, source: 1, time: -1 } },
];

/** What a chat, an embedding call or a plugin run used (one record per request). */
export interface UsageInput {
  teamId: string;
  tmbId: string;
  source: string;
  appName: string;
  appId?: string;
  list: NodeUsage[];
}

/** Usage (billing) records: the identity module owns `usages`; other modules record through it. */
export function createUsageRepo(db: Db) {
  const usages = db.collection<UsageDoc>(USAGES);
  // One record per chat turn: concurrent turns share an insert (see grouped-insert.ts).
  const requestRecords = createGroupedInserter(usages);
  return {
    /** Records a request's usage once it is stored; answers the points it cost. */
    async record(input: UsageInput, now: Date): Promise<number> {
      const totalPoints = input.list.reduce((sum, item) => sum + (item.totalPoints || 0), 0);
      await requestRecords.insert({
        _id: new ObjectId(),
        teamId: oid(input.teamId),
        tmbId: oid(input.tmbId),
        source: input.source as UsageSource,
        appName: input.appName,
        ...(input.appId ? { appId: oid(input.appId) } : {}),
        time: now,
        totalPoints,
        list: input.list.map((item) => ({ moduleName: item.moduleName, amount: item.totalPoints || 0, model: item.model, tokens: item.tokens })),
      });
      return totalPoints;
    },
    /** A record written as given (training usage); `appId` and `pluginId` are not set here. */
    async insert(input: Omit<UsageRecord, '_id' | 'time' | 'appId' | 'pluginId'> & { time?: Date }): Promise<UsageRecord> {
      const doc: UsageDoc = { _id: new ObjectId(), time: new Date(), ...input, teamId: oid(input.teamId), tmbId: oid(input.tmbId) };
      await usages.insertOne(doc);
      return plain(doc);
    },
    async findInTeam(id: string, teamId: string): Promise<UsageRecord | null> {
      const doc = await usages.findOne({ _id: oid(id), teamId: oid(teamId) });
      return plainOrNull(doc);
    },
  };
}

export type UsageRepo = ReturnType<typeof createUsageRepo>;
