const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

/**
 * The reference's `YYYY-MM-DD HH:mm:ss dddd` (UTC here; the web client sends its own cTime).
 * English weekday names from a table: an Intl formatter cost more than the rest of the turn setup.
 */
export function formatChatTime(date: Date): string {
  return `${date.toISOString().replace('T', ' ').slice(0, 19)} ${WEEKDAYS[date.getUTCDay()]}`;
}
