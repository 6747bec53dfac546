const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

/** The last second formatted: every turn formats the time, and most fall in a second already seen. */
let last = { second: Number.NaN, text: '' };

/**
 * The reference's `YYYY-MM-DD HH:mm:ss dddd` (UTC here; the web client sends its own cTime).
 * English weekday names from a table: an Intl formatter cost more than the rest of the turn setup.
 */
export function formatChatTime(date: Date): string {
  const second = Math.floor(date.getTime() / 1000);
  if (second !== last.second) {
    last = { second, text: `${date.toISOString().replace('T', ' ').slice(0, 19)} ${WEEKDAYS[date.getUTCDay()]}` };
  }
  return last.text;
}
