/**
 * Messages a channel has delivered, by link and message id. A channel delivers a message again
 * when it is not sure it arrived (Feishu redelivers events; WeChat and WeCom retry callbacks):
 * the first delivery to reach any replica claims the id with a unique insert and runs the turn,
 * a later one finds the claim and does nothing. Claims are kept a day, then removed.
 */
import type { Db } from 'mongodb';
import { type IndexDeclaration, isDuplicateKeyError } from '../../../infra/mongo.js';

export const CHANNEL_EVENTS = 'outlink_channel_events';
export const CHANNEL_EVENT_INDEXES: IndexDeclaration[] = [{ collection: CHANNEL_EVENTS, key: { at: 1 }, options: { name: 'at' } }];
/** How long a delivered message is remembered (the channels redeliver within minutes). */
export const CHANNEL_EVENT_RETENTION_MS = 24 * 60 * 60_000;

interface ChannelEventDoc {
  _id: string;
  at: Date;
}

export function createChannelEventsRepo(db: Db) {
  const events = db.collection<ChannelEventDoc>(CHANNEL_EVENTS);
  return {
    /** True for the first delivery of this message to this link (on any replica), false for a repeat. */
    async claim(linkId: string, messageId: string, now: Date): Promise<boolean> {
      try {
        await events.insertOne({ _id: `${linkId}:${messageId}`, at: now });
        return true;
      } catch (error) {
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
