/**
 * Messages the channels delivered, by link and message id, each a job that outlives the process
 * running it. A channel delivers a message again when it is not sure it arrived (Feishu redelivers
 * events; WeChat and WeCom retry callbacks): the first delivery to reach any replica claims the
 * id with a unique insert and runs the turn. The job holds what the turn needs (never a secret:
 * the channel's credentials are read from the link when it runs), its owner (the delivery running
 * it) and a lease the owner renews; a job whose lease lapsed (its process stopped) is taken over
 * by another replica's sweep or by a redelivery. A live or done job makes a repeat do nothing.
 * Jobs are kept a day after the message came, then removed.
 */
import { randomUUID } from 'node:crypto';
import type { Db, Filter } from 'mongodb';
import { type IndexDeclaration, isDuplicateKeyError } from '../../../infra/mongo.js';

export const CHANNEL_EVENTS = 'outlink_channel_events';
export const CHANNEL_EVENT_INDEXES: IndexDeclaration[] = [
  { collection: CHANNEL_EVENTS, key: { at: 1 }, options: { name: 'at' } },
  // The sweep's read: running jobs whose lease lapsed.
  { collection: CHANNEL_EVENTS, key: { state: 1, leaseUntil: 1 }, options: { name: 'state_leaseUntil' } },
];
/** How long a delivered message is remembered (the channels redeliver within minutes). */
export const CHANNEL_EVENT_RETENTION_MS = 24 * 60 * 60_000;

/** A message as its turn needs it, from any replica. */
export interface ChannelJobMessage {
  /** The link's `_id` (not its shareId, which is a credential). */
  linkId: string;
  /** The channel, which is also its link's type. */
  channel: 'feishu' | 'wecom' | 'official_account';
  chatId: string;
  uid: string;
  text: string;
  /** Where the answer goes: the Feishu message replied to, or the WeCom / WeChat user. */
  to: string;
}

interface ChannelEventDoc {
  _id: string;
  /** When the message first came (the retention counts from it). */
  at: Date;
  /** Absent on claims stored before jobs were: those read as done. */
  state?: 'running' | 'done';
  /** The delivery running it (a random id per take): tells its own insert, landed but unanswered, from another's. */
  owner?: string;
  /** Past it, the owner is taken for stopped. */
  leaseUntil?: Date;
  /** Takes so far: the first delivery's, then each takeover's. */
  attempts?: number;
  message?: ChannelJobMessage;
  /** The turn's answer once it ran: a later attempt sends it instead of running the turn again. */
  answer?: string;
  /** The link's immediate response went out (a later attempt does not send it again). */
  immediateSent?: boolean;
}

/** A job as stored; `state` is 'done' for claims of the previous version. */
export interface ChannelJob {
  id: string;
  state: 'running' | 'done';
  owner: string;
  leaseUntil: Date;
  attempts: number;
  message?: ChannelJobMessage;
  answer?: string;
  immediateSent: boolean;
}

const toJob = (doc: ChannelEventDoc): ChannelJob => ({
  id: doc._id,
  state: doc.state ?? 'done',
  owner: doc.owner ?? '',
  leaseUntil: doc.leaseUntil ?? doc.at,
  attempts: doc.attempts ?? 1,
  message: doc.message,
  answer: doc.answer,
  immediateSent: doc.immediateSent === true,
});

/** What a claim found: the job to run (this delivery's), or another delivery's job (or none). */
export type ChannelClaim = { mine: ChannelJob } | { other: ChannelJob | null };

export function createChannelEventsRepo(db: Db) {
  const events = db.collection<ChannelEventDoc>(CHANNEL_EVENTS);
  const held = (job: Pick<ChannelJob, 'id' | 'owner'>): Filter<ChannelEventDoc> => ({ _id: job.id, state: 'running', owner: job.owner });
  /** The job as it was left by `owner`, lapsed at `now`: what a takeover or a give-up may change. */
  const lapsed = (job: Pick<ChannelJob, 'id' | 'owner'>, now: Date): Filter<ChannelEventDoc> => ({ ...held(job), leaseUntil: { $lt: now } });
  const matched = async (filter: Filter<ChannelEventDoc>, set: Partial<ChannelEventDoc>) => (await events.updateOne(filter, { $set: set })).matchedCount > 0;

  return {
    /** The first delivery of this message to this link (on any replica) stores it as its running job. */
    async claim(id: string, message: ChannelJobMessage, now: Date, leaseUntil: Date): Promise<ChannelClaim> {
      const owner = randomUUID();
      const doc: ChannelEventDoc = { _id: id, at: now, state: 'running', owner, leaseUntil, attempts: 1, message, immediateSent: false };
      try {
        await events.insertOne(doc);
        return { mine: toJob(doc) };
      } catch (error) {
        // An insert whose answer was lost (a dropped connection, a failover, a retried write
        // meeting itself) may have landed: read back whose job it is. Failing here instead sent
        // the channel's redelivery into this delivery's claim, and the message was never answered.
        const stored = await events.findOne({ _id: id }).catch(() => null);
        if (stored?.owner === owner) return { mine: toJob(stored) };
        if (isDuplicateKeyError(error)) return { other: stored ? toJob(stored) : null };
        throw error;
      }
    },

    /**
     * Takes over a running job whose lease lapsed at `now`, as `job` shows it; the job as taken,
     * or null when another took it first. FerretDB 1.x runs a conditional update as read-then-write,
     * so two takers may both match: the owner is read back and only the one it names runs the job
     * (a taker whose read-back came before the other's write still runs it too: the rare double).
     */
    async takeOver(job: ChannelJob, now: Date, leaseUntil: Date): Promise<ChannelJob | null> {
      const owner = randomUUID();
      const result = await events.updateOne(lapsed(job, now), { $set: { owner, leaseUntil }, $inc: { attempts: 1 } });
      if (result.matchedCount === 0) return null;
      const stored = await events.findOne({ _id: job.id });
      return stored?.owner === owner && stored.state === 'running' ? toJob(stored) : null;
    },

    /**
     * Running jobs whose lease lapsed at `now` (a stopped process's, or deferred ones), oldest lease
     * first, leaving out the messages of the links in `skipLinks` (those this process cannot run now).
     */
    async lapsed(now: Date, limit: number, skipLinks: string[] = []): Promise<ChannelJob[]> {
      const filter: Filter<ChannelEventDoc> = { state: 'running', leaseUntil: { $lt: now } };
      if (skipLinks.length > 0) filter['message.linkId'] = { $nin: skipLinks };
      const docs = await events.find(filter).sort({ leaseUntil: 1 }).limit(limit).toArray();
      return docs.map(toJob);
    },

    /** Whether a job of the link waits (deferred, or its process stopped): a place of the link given back may run it. */
    async hasLapsed(linkId: string, now: Date): Promise<boolean> {
      return (await events.findOne({ state: 'running', leaseUntil: { $lt: now }, 'message.linkId': linkId }, { projection: { _id: 1 } })) !== null;
    },

    /** Moves the owner's lease on; false once the job is no longer its own (taken over, or done). */
    renew: (job: ChannelJob, leaseUntil: Date) => matched(held(job), { leaseUntil }),
    /** Records the owner's progress (the answer, the immediate response sent); false once the job is not its own. */
    record: (job: ChannelJob, progress: Pick<ChannelEventDoc, 'answer' | 'immediateSent'>) => matched(held(job), progress),
    /** The turn ended (answered, or given up): no one runs it again. */
    finish: (job: ChannelJob) => matched(held(job), { state: 'done' }),
    /** The owner's attempt failed: its lease ends now, so the next sweep tries again. */
    release: (job: ChannelJob, now: Date) => matched(held(job), { leaseUntil: now }),
    /**
     * The owner could not start the job (its process runs as many turns as it may): its lease ends
     * now and the take is not counted, so the next sweep (here or on another replica) runs it and
     * waiting never spends its attempts. False once the job is not the owner's.
     */
    defer: async (job: ChannelJob, now: Date) => (await events.updateOne(held(job), { $set: { leaseUntil: now }, $inc: { attempts: -1 } })).matchedCount > 0,
    /** Ends a lapsed job no one is to run again (its attempts are used up); false when another took it first. */
    giveUp: (job: ChannelJob, now: Date) => matched(lapsed(job, now), { state: 'done' }),

    /**
     * Removes the jobs that came before `cutoff`: done ones, and running ones whose lease lapsed
     * (a day on, an answer is no use). A job still being run stays until its turn ends.
     */
    async deleteBefore(cutoff: Date, now: Date): Promise<number> {
      return (await events.deleteMany({ at: { $lt: cutoff }, $or: [{ state: { $ne: 'running' } }, { leaseUntil: { $lt: now } }] })).deletedCount;
    },
  };
}

export type ChannelEventsRepo = ReturnType<typeof createChannelEventsRepo>;
