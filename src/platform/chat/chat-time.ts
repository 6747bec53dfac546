import { zonedDateTime } from '../../domain/zoned-time.js';

/** A day in milliseconds (the chat windows: a share link's 30 days of histories, the logs page's default week). */
export const DAY_MS = 24 * 60 * 60 * 1000;

/** The last second formatted per time zone: every turn formats the time, most in a second already seen. */
const lastByZone = new Map<string, { second: number; text: string }>();

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
  lastByZone.set(timeZone, { second, text });
  return text;
}
