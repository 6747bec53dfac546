/**
 * Share-link QPM: at most `QPM` chat starts per link per clock minute, counted in MongoDB so
 * every replica shares the count. Each start takes one numbered slot of the link's minute (an
 * insert with a unique `_id`; see infra/attempt-limiter.ts for why not a shared `$inc`).
 */
import type { Db } from 'mongodb';
import { type AttemptLimiter, type AttemptReservation, attemptIndexes, createAttemptLimiter } from '../../infra/attempt-limiter.js';
import { LruMap } from '../../infra/lru-map.js';

export const OUTLINK_QPM_SLOTS = 'outlink_qpm_slots';
export const OUTLINK_QPM_INDEXES = attemptIndexes(OUTLINK_QPM_SLOTS);
const MINUTE_MS = 60_000;
/**
 * QPM values whose limiter is kept: links use a few; a link's owner changing its QPM through
 * the 100,001 values allowed would otherwise keep one each (about 500 bytes).
 */
const KEPT_QPM_VALUES = 64;

export function createShareQpmLimiter(db: Db, now: () => number) {
  // One limiter per QPM value in use (a limiter is only its options: no state of its own).
  const limiters = new LruMap<AttemptLimiter>(KEPT_QPM_VALUES);
  const limiterFor = (qpm: number): AttemptLimiter => {
    let limiter = limiters.get(String(qpm));
    if (!limiter) {
      limiter = createAttemptLimiter(db, { collection: OUTLINK_QPM_SLOTS, maxAttempts: qpm, windowMs: MINUTE_MS, now });
      limiters.set(String(qpm), limiter);
    }
    return limiter;
  };
  return {
    /** Takes one of the link's `qpm` starts of this minute, or says when the minute ends. */
    take: (shareId: string, qpm: number): Promise<AttemptReservation> => limiterFor(qpm).reserve(shareId),
    /** Removes the slots of ended minutes. */
    deleteExpired: (): Promise<number> => limiterFor(1).deleteExpired(),
  };
}

export type ShareQpmLimiter = ReturnType<typeof createShareQpmLimiter>;
