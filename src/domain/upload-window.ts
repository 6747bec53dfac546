/**
 * A byte bound over a rolling window of uploads: whether one more upload fits, given what is
 * stored in the window now (the caller sums it; this is the decision only).
 */
export type UploadWindowVerdict = 'fits' | 'larger-than-bound' | 'window-full';

/** `maxBytes` is positive: a bound of 0 ("none") is the caller's to skip. */
export function judgeUploadWindow(input: { maxBytes: number; size: number; usedBytes: number }): UploadWindowVerdict {
  // No wait makes room for it: a retry-later answer would be retried for ever.
  if (input.size > input.maxBytes) return 'larger-than-bound';
  return input.usedBytes + input.size <= input.maxBytes ? 'fits' : 'window-full';
}

/**
 * Seconds until the oldest upload in a full window leaves it (at least 1): the earliest moment
 * room can appear. Room for a given upload may take longer; a retry then is judged again.
 */
export function secondsUntilLeavingWindow(oldest: Date | null, windowMs: number, now: number): number {
  const leavesInMs = (oldest?.getTime() ?? now) + windowMs - now;
  return Math.max(1, Math.ceil(leavesInMs / 1000));
}
