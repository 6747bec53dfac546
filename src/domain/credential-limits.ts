/**
 * The limits of a credential that spends points or lapses (API keys, share links, stored images):
 * one rule for every check, so the authenticator never refuses a key that the repository's
 * revocation (which tells every replica to drop its cached credential) still lets through, or
 * the reverse.
 */

/** Whether `used` points exhaust a limit of `max` (-1 or unset: no limit; 0 allows nothing). */
export function usedUp(max: number | null | undefined, used: number): boolean {
  return max !== null && max !== undefined && max > -1 && used >= max;
}

/**
 * Whether a credential expiring `at` is refused at `now` (milliseconds): the expiry is the first
 * instant it is refused. No expiry (or an unreadable one) never lapses.
 */
export function expired(at: Date | string | number | null | undefined, now: number): boolean {
  if (at === null || at === undefined) return false;
  return new Date(at).getTime() <= now;
}
