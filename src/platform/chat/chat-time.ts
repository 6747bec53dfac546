import { zonedDateTime } from '../../domain/zoned-time.js';

/** A day in milliseconds (the chat windows: a share link's 30 days of histories, the logs page's default week). */
export const DAY_MS = 24 * 60 * 60 * 1000;

/** The last second formatted per time zone: every turn formats the time, most in a second already seen. */
const lastByZone = new Map<string, { second: number; text: string }>();
/**
 * Zones remembered at most: a profile's zone is any spelling of a known one (case differs), so
 * users could otherwise add entries without end; past it the memo starts again (a second's miss).
 */
const MAX_REMEMBERED_ZONES = 1000;

/**
 * The reference's `YYYY-MM-DD HH:mm:ss dddd` in the user's time zone (UTC without one, or for a
 * zone this runtime does not know: a stored zone must not fail the turn); the web client sends its own cTime.
 */
export function formatChatTime(date: Date, timeZone = 'UTC'): string {
  const second = Math.floor(date.getTime() / 1000);
  const last = lastByZone.get(timeZone);
  if (last?.second === second) return last.text;
  const zoned = zonedDateTime(date, timeZone) ?? zonedDateTime(date, 'UTC')!;
  const text = `${zoned.dateTime} ${zoned.weekday}`;
  if (lastByZone.size >= MAX_REMEMBERED_ZONES && !lastByZone.has(timeZone)) lastByZone.clear();
  lastByZone.set(timeZone, { second, text });
  return text;
}
