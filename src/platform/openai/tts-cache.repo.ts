/**
 * The speech cache (`buffer_tts`): one entry per team, voice and text+speed, kept 24 h. Per team
 * (the reference shares it): otherwise an instant, unbilled answer tells one team that another
 * had that exact text spoken, and gives it the recording for free.
 * FerretDB has no TTL index, so expiry is checked on read and swept periodically.
 */
import { Binary, type Db, ObjectId } from 'mongodb';
import type { IndexDeclaration } from '../../infra/mongo.js';

export const BUFFER_TTS = 'buffer_tts';
export const TTS_CACHE_MS = 24 * 60 * 60 * 1000;
export const TTS_INDEXES: IndexDeclaration[] = [
  { collection: BUFFER_TTS, key: { teamId: 1, bufferId: 1, text: 1 } },
  // The sweep's range: served on MongoDB instead of a scan of every cached recording.
  { collection: BUFFER_TTS, key: { createTime: 1 } },
];

interface TtsDoc {
  _id: ObjectId;
  teamId: string;
  bufferId: string;
  text: string;
  buffer: Binary;
  createTime: Date;
}

export function createTtsCache(db: Db) {
  const cache = db.collection<TtsDoc>(BUFFER_TTS);
  return {
    async get(teamId: string, bufferId: string, text: string, now: Date): Promise<Buffer | null> {
      const doc = await cache.findOne({ teamId, bufferId, text, createTime: { $gt: new Date(now.getTime() - TTS_CACHE_MS) } });
      return doc ? Buffer.from(doc.buffer.buffer) : null;
    },
    async put(teamId: string, bufferId: string, text: string, buffer: Buffer, now: Date): Promise<void> {
      await cache.deleteMany({ teamId, bufferId, text });
      await cache.insertOne({ _id: new ObjectId(), teamId, bufferId, text, buffer: new Binary(buffer), createTime: now });
    },
    async sweep(now: Date): Promise<void> {
      await cache.deleteMany({ createTime: { $lte: new Date(now.getTime() - TTS_CACHE_MS) } });
    },
  };
}

export type TtsCache = ReturnType<typeof createTtsCache>;
