/**
 * The channels' API access tokens (WeChat, WeCom, Feishu), shared by every replica: WeChat's
 * `cgi-bin/token` is limited to 2,000 calls a day per account and each call invalidates the
 * account's previous token (breaking the account's other systems' cached one after 5 minutes);
 * WeCom's `gettoken` must be cached and is rate-limited. One document per credential, keyed by a
 * hash of the channel, API base, app id and secret (no secret is stored); the token itself is
 * kept until shortly before it expires.
 */
import type { Db } from 'mongodb';

export const CHANNEL_TOKENS = 'outlink_channel_tokens';

interface ChannelTokenDoc {
  /** sha256 of the channel, API base, app id and secret. */
  _id: string;
  token: string;
  /** When it is no longer used (before the channel's own expiry). */
  until: Date;
}

export function createChannelTokensRepo(db: Db) {
  const tokens = db.collection<ChannelTokenDoc>(CHANNEL_TOKENS);
  return {
    /** The stored token of `key`, if it is still good at `now`. */
    async find(key: string, now: Date): Promise<string | null> {
      const doc = await tokens.findOne({ _id: key });
      return doc && doc.until.getTime() > now.getTime() ? doc.token : null;
    },
    save: async (key: string, token: string, until: Date) => {
      await tokens.updateOne({ _id: key }, { $set: { token, until } }, { upsert: true });
    },
    /** Forgets `token` (the channel refused it); a newer one another replica stored stays. */
    drop: async (key: string, token: string) => {
      await tokens.deleteOne({ _id: key, token });
    },
  };
}

export type ChannelTokensRepo = ReturnType<typeof createChannelTokensRepo>;
