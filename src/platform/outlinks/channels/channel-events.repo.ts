/**
 * Messages a channel has delivered, by link and message id. A channel delivers a message again
 * when it is not sure it arrived (Feishu redelivers events; WeChat and WeCom retry callbacks):
 * the first delivery to reach any replica claims the id with a unique insert and runs the turn,
 * a later one finds the claim and does nothing. Claims are kept a day, then removed.
 */
import { randomUUID } from 'node:crypto';
import type { Db } from 'mongodb';
import { type IndexDeclaration, isDuplicateKeyError } from '../../../infra/mongo.js';

export const CHANNEL_EVENTS = 'outlink_channel_events';
export const CHANNEL_EVENT_INDEXES: IndexDeclaration[] = [{ collection: CHANNEL_EVENTS, key: { at: 1 }, options: { name: 'at' } }];
/** How long a delivered message is remembered (the channels redeliver within minutes). */
export const CHANNEL_EVENT_RETENTION_MS = 24 * 60 * 60_000;

interface ChannelEventDoc {
  _id: string;
  at: Date;
  /** The delivery that claimed it: tells its own insert, landed but unanswered, from another's. */
  by?: string;
}

export function createChannelEventsRepo(db: Db) {
  const events = db.collection<ChannelEventDoc>(CHANNEL_EVENTS);
  return {
    /** True for the first delivery of this message to this link (on any replica), false for a repeat. */
    async claim(linkId: string, messageId: string, now: Date): Promise<boolean> {
      const _id = `${linkId}:${messageId}`;
      const by = randomUUID();
      try {
        await events.insertOne({ _id, at: now, by });
        return true;
      } catch (error) {
        // An insert whose answer was lost (a dropped connection, a failover, a retried write
        // meeting itself) may have landed: read back whose claim it is. Failing here instead sent
        // the channel's redelivery into this delivery's claim, and the message was never answered.
        const claim = await events.findOne({ _id }).catch(() => null);
        if (claim?.by === by) return true;
        if (isDuplicateKeyError(error)) return false;
        throw error;
      }
    },
    /** Removes the claims older than the retention. */
    async deleteBefore(cutoff: Date): Promise<number> {
      return (await events.deleteMany({ at: { $lt: cutoff } })).deletedCount;
    },
  };
}

export type ChannelEventsRepo = ReturnType<typeof createChannelEventsRepo>;
