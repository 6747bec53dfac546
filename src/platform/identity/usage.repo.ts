import { type Db, ObjectId } from 'mongodb';
import type { NodeUsage } from '../../domain/workflow/types.js';
import type { IndexDeclaration } from '../../infra/mongo.js';
import { oid, type Plain, plain, plainOrNull } from '../../infra/plain-record.js';
import { createWriteBehind } from '../../infra/write-behind.js';

export type UsageSource = 'fastgpt' | 'api' | 'shareLink' | 'training' | 'cronJob' | 'share' | 'wecom' | 'feishu' | 'official_account';

export interface UsageItem {
  moduleName: string;
  amount: number;
  model?: string;
  tokens?: number;
  charsLength?: number;
  duration?: number;
}

/**
 * A `usages` document (reference names). The reference keeps records 180 days with a TTL index;
 * FerretDB has none, so an hourly sweep deletes older ones (`deleteBefore`, index on `time`).
 */
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
/** How long usage records are kept (the reference's TTL). */
export const USAGE_RETENTION_MS = 180 * 24 * 60 * 60 * 1000;

export const USAGE_INDEXES: IndexDeclaration[] = [
  { collection: USAGES, key: { time: 1 } },
  { collection: USAGES, key: { teamId: 1, time: -1 } },
  { collection: USAGES, key: { teamId: 1, tmbId: 1, source: 1, time: -1 } },
];

/** One line of a usage record; audio lines carry the characters spoken or the seconds heard. */
export type UsageLine = NodeUsage & { charsLength?: number; duration?: number };

/** What a chat, an embedding call or a plugin run used (one record per request). */
export interface UsageInput {
  teamId: string;
  tmbId: string;
  source: string;
  appName: string;
  appId?: string;
  list: UsageLine[];
}

export interface UsageRepoOptions {
  /** Told of a record that could not be written after its retries (an outage of over a minute). */
  onLost: (error: unknown, record: UsageRecord) => void;
}

/**
 * Request records are written in batches: those of the next 100 ms share one insert (at most 500
 * per insert), retried while the database is unavailable for about a minute in all; at most
 * 50,000 records (some 15 MB) wait at once, the others are logged as lost.
 */
const RECORD_BATCHING = { windowMs: 100, maxBatch: 500, retry: { firstMs: 500, maxMs: 10_000 }, attempts: 10, maxPending: 50_000 };

/** Usage (billing) records: the identity module owns `usages`; other modules record through it. */
export function createUsageRepo(db: Db, options: UsageRepoOptions) {
  const usages = db.collection<UsageDoc>(USAGES);
  // One record per request, written behind the answer as the reference does (it sends usage
  // without waiting), in batches (see write-behind.ts).
  const requestRecords = createWriteBehind<UsageDoc>({
    ...RECORD_BATCHING,
    insertMany: (docs) => usages.insertMany(docs, { ordered: false }),
    onLost: (error, docs) => {
      for (const doc of docs) options.onLost(error, plain(doc));
    },
  });
  return {
    /**
     * Queues a request's usage record and answers the points it cost at once; the record is
     * written in the background (`drain` waits for it). The points a caller is charged
     * (`usagePoints` of a key or share link) are not deferred: limits depend on them.
     */
    record(input: UsageInput, now: Date): number {
      const totalPoints = input.list.reduce((sum, item) => sum + (item.totalPoints || 0), 0);
      requestRecords.add({
        _id: new ObjectId(),
        teamId: oid(input.teamId),
        tmbId: oid(input.tmbId),
        source: input.source as UsageSource,
        appName: input.appName,
        ...(input.appId ? { appId: oid(input.appId) } : {}),
        time: now,
        totalPoints,
        list: input.list.map((item) => ({
          moduleName: item.moduleName,
          amount: item.totalPoints || 0,
          model: item.model,
          tokens: item.tokens,
          ...(item.charsLength !== undefined ? { charsLength: item.charsLength } : {}),
          ...(item.duration !== undefined ? { duration: item.duration } : {}),
        })),
      });
      return totalPoints;
    },
    /** Resolves once every record queued so far is written (or given up and reported). */
    drain: () => requestRecords.drain(),
    /** Shutting down: writes the queued records without further retries (see write-behind.ts). */
    close: () => requestRecords.close(),
    /** A record written as given (training usage); `appId` and `pluginId` are not set here. */
    async insert(input: Omit<UsageRecord, '_id' | 'time' | 'appId' | 'pluginId'> & { time?: Date }): Promise<UsageRecord> {
      const doc: UsageDoc = { _id: new ObjectId(), time: new Date(), ...input, teamId: oid(input.teamId), tmbId: oid(input.tmbId) };
      await usages.insertOne(doc);
      return plain(doc);
    },
    /** The retention sweep: records older than `cutoff` go. */
    async deleteBefore(cutoff: Date): Promise<number> {
      return (await usages.deleteMany({ time: { $lt: cutoff } })).deletedCount;
    },
    async findInTeam(id: string, teamId: string): Promise<UsageRecord | null> {
      const doc = await usages.findOne({ _id: oid(id), teamId: oid(teamId) });
      return plainOrNull(doc);
    },
  };
}

export type UsageRepo = ReturnType<typeof createUsageRepo>;
